// A RocksDB iterator over one column family (or over a write batch merged with the database).
// Not thread-safe: use from one thread. Destroyed exactly once, in deinit (or, for one over the
// newest state, handed back to its database's `IteratorPool`, which destroys it later); it
// keeps the snapshot, batch or database it reads alive until then.

import CRocksDB
import Glibc

public final class Iterator {
    private let iterator: OpaquePointer
    private let retained: AnyObject?
    /// Set for an iterator from `Database.makeCurrentIterator`: it goes back to the pool.
    private let pooled: (database: Database, family: OpaquePointer, view: DatabaseView)?

    init(_ iterator: OpaquePointer, retaining retained: AnyObject?) {
        self.iterator = iterator
        self.retained = retained
        self.pooled = nil
    }

    init(_ iterator: OpaquePointer, pooledIn database: Database, family: OpaquePointer, view: DatabaseView) {
        self.iterator = iterator
        self.retained = database
        self.pooled = (database, family, view)
    }

    deinit {
        if let pooled {
            let database = pooled.database
            database.iteratorPool.give(self.iterator, family: pooled.family, view: pooled.view) { database.currentView }
        } else {
            rocksdb_iter_destroy(self.iterator)
        }
    }

    /// The state this iterator reads, for one from `Database.makeCurrentIterator`.
    public var view: DatabaseView? { self.pooled?.view }

    public var isValid: Bool { rocksdb_iter_valid(self.iterator) != 0 }

    public func seek(_ key: [UInt8]) {
        key.withUnsafeBufferPointer { k in
            k.withMemoryRebound(to: CChar.self) { rocksdb_iter_seek(self.iterator, $0.baseAddress, $0.count) }
        }
    }

    public func seekForPrev(_ key: [UInt8]) {
        key.withUnsafeBufferPointer { k in
            k.withMemoryRebound(to: CChar.self) { rocksdb_iter_seek_for_prev(self.iterator, $0.baseAddress, $0.count) }
        }
    }

    public func seekToFirst() { rocksdb_iter_seek_to_first(self.iterator) }
    public func seekToLast() { rocksdb_iter_seek_to_last(self.iterator) }
    public func next() { rocksdb_iter_next(self.iterator) }
    public func previous() { rocksdb_iter_prev(self.iterator) }

    /// The current key's bytes, valid until the iterator moves. Precondition: `isValid`.
    public func withKey<T, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
        var length = 0
        let pointer = rocksdb_iter_key(self.iterator, &length)
        return try body(UnsafeRawBufferPointer(start: pointer, count: length))
    }

    public func withValue<T, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
        var length = 0
        let pointer = rocksdb_iter_value(self.iterator, &length)
        return try body(UnsafeRawBufferPointer(start: pointer, count: length))
    }

    public var key: [UInt8] { self.withKey { Array($0) } }
    public var value: [UInt8] { self.withValue { Array($0) } }

    /// True when the current key starts with `prefix`. Precondition: `isValid`.
    public func keyHasPrefix(_ prefix: [UInt8]) -> Bool {
        self.withKey { key in
            guard key.count >= prefix.count else { return false }
            if prefix.isEmpty { return true }
            return prefix.withUnsafeBytes { memcmp($0.baseAddress!, key.baseAddress!, prefix.count) == 0 }
        }
    }

    /// Throws the error that stopped iteration, if any (call when `isValid` turns false).
    public func checkError() throws(RocksDBError) {
        try RocksDBError.check { err in rocksdb_iter_get_error(self.iterator, err) }
    }
}
