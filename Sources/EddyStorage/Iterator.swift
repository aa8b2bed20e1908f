// A RocksDB iterator over one column family (or over a write batch merged with the database).
// Not thread-safe: use from one thread. Destroyed exactly once, in deinit (or, for one over the
// newest state, handed back to its database's `IteratorPool`, which destroys it later); it
// keeps the snapshot, batch or database it reads alive until then.
//
// A guarded iterator (the committer's, over its write batch) stops a seek or step that skips
// more than `TombstoneGuard.skippedKeysMax` deleted or hidden records (RocksDB's
// `max_skippable_internal_keys`) instead of walking them all, and redoes it on a fallback
// iterator over the same state: bounded above by the scope's end when the caller scans one
// prefix (`seek(_:within:)`: the walk stops at the subtree's end), unbounded otherwise. After
// one such stop every later scoped seek goes straight to a bounded fallback. Without this,
// removing a large subtree and then writing into it costs each write a walk over every
// tombstone after its key, until compaction drops them (a 300,000-child import over a
// replaced location made no progress in 10 minutes).

import CRocksDB
import Glibc

public final class Iterator {
    private let iterator: OpaquePointer
    private let retained: AnyObject?
    /// Set for an iterator from `Database.makeCurrentIterator`: it goes back to the pool.
    private let pooled: (database: Database, family: OpaquePointer, view: DatabaseView)?
    /// Set for a guarded iterator: makes a fallback reading the same state, bounded above by
    /// the given key (nil: unbounded).
    private let makeFallback: (([UInt8]?) -> TombstoneGuard.Fallback)?
    /// The fallback in use since the last seek, if any.
    private var fallback: TombstoneGuard.Fallback?
    /// The prefix the current scan stays in (`seek(_:within:)`).
    private var scope: [UInt8]?
    /// A guarded seek stopped once: later scoped seeks use a bounded fallback at once.
    private var tombstonesSeen = false
    /// How many moves a fallback redid (a guarded iterator's; for tests and diagnosis).
    public private(set) var fallbacksMade = 0
    /// The key a guarded step leaves (reused storage: a step allocates nothing).
    private var leftKey: [UInt8] = []

    init(_ iterator: OpaquePointer, retaining retained: AnyObject?) {
        self.iterator = iterator
        self.retained = retained
        self.pooled = nil
        self.makeFallback = nil
    }

    init(_ iterator: OpaquePointer, pooledIn database: Database, family: OpaquePointer, view: DatabaseView) {
        self.iterator = iterator
        self.retained = database
        self.pooled = (database, family, view)
        self.makeFallback = nil
    }

    init(guarded iterator: OpaquePointer, retaining retained: AnyObject?, fallback: @escaping ([UInt8]?) -> TombstoneGuard.Fallback) {
        self.iterator = iterator
        self.retained = retained
        self.pooled = nil
        self.makeFallback = fallback
    }

    deinit {
        self.fallback = nil
        if let pooled {
            let database = pooled.database
            database.iteratorPool.give(self.iterator, family: pooled.family, view: pooled.view) { database.currentView }
        } else {
            rocksdb_iter_destroy(self.iterator)
        }
    }

    /// The state this iterator reads, for one from `Database.makeCurrentIterator`.
    public var view: DatabaseView? { self.pooled?.view }

    /// The RocksDB iterator positioned now: the fallback's when one is in use.
    private var current: OpaquePointer { self.fallback?.iterator ?? self.iterator }

    public var isValid: Bool { rocksdb_iter_valid(self.current) != 0 }

    public func seek(_ key: [UInt8]) {
        self.seek(key, within: nil)
    }

    /// Seeks for a scan that stays within `scope` (a prefix of `key`): a guarded iterator's
    /// fallback then stops at the scope's end instead of walking tombstones beyond it.
    public func seek(_ key: [UInt8], within scope: [UInt8]?) {
        self.fallback = nil
        self.scope = scope
        if self.makeFallback != nil, self.tombstonesSeen, let scope, let end = TombstoneGuard.end(of: scope) {
            self.useFallback(bound: end) { Self.seek($0, key) }
            return
        }
        Self.seek(self.iterator, key)
        self.recoverIfStopped { Self.seek($0, key) }
    }

    public func seekForPrev(_ key: [UInt8]) {
        self.fallback = nil
        self.scope = nil
        Self.seekForPrev(self.iterator, key)
        self.recoverIfStopped { Self.seekForPrev($0, key) }
    }

    private static func seek(_ iterator: OpaquePointer, _ key: [UInt8]) {
        key.withUnsafeBufferPointer { k in
            k.withMemoryRebound(to: CChar.self) { rocksdb_iter_seek(iterator, $0.baseAddress, $0.count) }
        }
    }

    private static func seekForPrev(_ iterator: OpaquePointer, _ key: [UInt8]) {
        key.withUnsafeBufferPointer { k in
            k.withMemoryRebound(to: CChar.self) { rocksdb_iter_seek_for_prev(iterator, $0.baseAddress, $0.count) }
        }
    }

    /// After an operation on the primary iterator of a guarded one: when it stopped for too
    /// many skipped records, redoes `redo` on a fallback (bounded by the scope when there is one).
    private func recoverIfStopped(_ redo: (OpaquePointer) -> Void) {
        guard self.makeFallback != nil, self.fallback == nil, TombstoneGuard.stoppedForSkips(self.iterator) else { return }
        self.tombstonesSeen = true
        self.useFallback(bound: self.scope.flatMap(TombstoneGuard.end(of:)), redo)
    }

    private func rememberKey() {
        self.leftKey.removeAll(keepingCapacity: true)
        self.withKey { self.leftKey.append(contentsOf: $0) }
    }

    private func useFallback(bound: [UInt8]?, _ redo: (OpaquePointer) -> Void) {
        guard let makeFallback else { return }
        let fallback = makeFallback(bound)
        self.fallback = fallback
        self.fallbacksMade += 1
        redo(fallback.iterator)
    }

    public func seekToFirst() {
        self.fallback = nil
        self.scope = nil
        rocksdb_iter_seek_to_first(self.iterator)
        self.recoverIfStopped { rocksdb_iter_seek_to_first($0) }
    }

    public func seekToLast() {
        self.fallback = nil
        self.scope = nil
        rocksdb_iter_seek_to_last(self.iterator)
        self.recoverIfStopped { rocksdb_iter_seek_to_last($0) }
    }

    public func next() {
        guard self.makeFallback != nil, self.fallback == nil else { return rocksdb_iter_next(self.current) }
        // A guarded step that stops resumes on a fallback just after the key it left.
        guard self.isValid else { return rocksdb_iter_next(self.iterator) }
        self.rememberKey()
        rocksdb_iter_next(self.iterator)
        guard TombstoneGuard.stoppedForSkips(self.iterator) else { return }
        let after = self.leftKey + [0]
        self.recoverIfStopped { Self.seek($0, after) }
    }

    public func previous() {
        guard self.makeFallback != nil, self.fallback == nil else { return rocksdb_iter_prev(self.current) }
        guard self.isValid else { return rocksdb_iter_prev(self.iterator) }
        self.rememberKey()
        rocksdb_iter_prev(self.iterator)
        guard TombstoneGuard.stoppedForSkips(self.iterator) else { return }
        let left = self.leftKey
        self.scope = nil  // a backward step has no upper bound to keep
        self.recoverIfStopped { fallback in
            Self.seekForPrev(fallback, left)
            guard rocksdb_iter_valid(fallback) != 0 else { return }
            var length = 0
            let at = rocksdb_iter_key(fallback, &length)
            let onLeft = length == left.count && (length == 0 || left.withUnsafeBytes { memcmp($0.baseAddress!, at!, length) == 0 })
            if onLeft { rocksdb_iter_prev(fallback) }  // else already before it
        }
    }

    /// The current key's bytes, valid until the iterator moves. Precondition: `isValid`.
    public func withKey<T, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
        var length = 0
        let pointer = rocksdb_iter_key(self.current, &length)
        return try body(UnsafeRawBufferPointer(start: pointer, count: length))
    }

    public func withValue<T, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
        var length = 0
        let pointer = rocksdb_iter_value(self.current, &length)
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
        try RocksDBError.check { err in rocksdb_iter_get_error(self.current, err) }
    }
}
