// A write batch that indexes its own entries, so reads through it (`get`, `makeIterator`) see
// the batch's uncommitted changes on top of the database: later writes of a commit group see
// earlier ones. Not thread-safe: owned by the single committer.

import CRocksDB

public final class WriteBatchWithIndex {
    let batch: OpaquePointer
    private let database: Database
    /// The read options of `makeIterator`'s iterators: guarded (see `TombstoneGuard`).
    private let guardedReadOptions: OpaquePointer

    /// `skippedKeysMax`: how many records a move of `makeIterator`'s iterators may skip before
    /// it is redone on a fallback (tests lower it).
    public init(database: Database, reservedBytes: Int = 1 << 20, skippedKeysMax: UInt64 = TombstoneGuard.skippedKeysMax) {
        self.database = database
        // overwrite_key = 1: a later put/delete of the same key replaces the earlier one in the
        // index, so reads see the newest.
        self.batch = rocksdb_writebatch_wi_create(reservedBytes, 1)!
        self.guardedReadOptions = TombstoneGuard.makeGuardedReadOptions(skippedKeysMax: skippedKeysMax)
    }

    deinit {
        rocksdb_writebatch_wi_destroy(self.batch)
        rocksdb_readoptions_destroy(self.guardedReadOptions)
    }

    public var count: Int { Int(rocksdb_writebatch_wi_count(self.batch)) }

    public func clear() { rocksdb_writebatch_wi_clear(self.batch) }

    public func put(_ family: ColumnFamily, _ key: [UInt8], _ value: [UInt8]) {
        key.withUnsafeBufferPointer { k in
            value.withUnsafeBufferPointer { v in
                k.withMemoryRebound(to: CChar.self) { k in
                    v.withMemoryRebound(to: CChar.self) { v in
                        rocksdb_writebatch_wi_put_cf(self.batch, family.handle, k.baseAddress, k.count, v.baseAddress, v.count)
                    }
                }
            }
        }
    }

    public func delete(_ family: ColumnFamily, _ key: [UInt8]) {
        key.withUnsafeBufferPointer { k in
            k.withMemoryRebound(to: CChar.self) { rocksdb_writebatch_wi_delete_cf(self.batch, family.handle, $0.baseAddress, $0.count) }
        }
    }

    /// The value at `key` as the batch would leave it, nil when absent.
    public func get(_ family: ColumnFamily, _ key: [UInt8]) throws(RocksDBError) -> [UInt8]? {
        var length = 0
        let value = try RocksDBError.check { err in
            key.withUnsafeBufferPointer { k in
                k.withMemoryRebound(to: CChar.self) { k in
                    rocksdb_writebatch_wi_get_from_batch_and_db_cf(
                        self.batch, self.database.db, self.database.readOptions, family.handle, k.baseAddress, k.count,
                        &length, err)
                }
            }
        }
        guard let value else { return nil }
        defer { rocksdb_free(value) }
        return Array(UnsafeRawBufferPointer(start: value, count: length))
    }

    /// An iterator over the database with this batch's changes applied. Guarded: a move that
    /// would walk many tombstones is redone on a fallback (see `Iterator`), which reads the same
    /// state: only the committer writes, on the thread that reads through this batch.
    public func makeIterator(_ family: ColumnFamily) -> Iterator {
        let base = rocksdb_create_iterator_cf(self.database.db, self.guardedReadOptions, family.handle)!
        let handle = family.handle
        return Iterator(
            guarded: rocksdb_writebatch_wi_create_iterator_with_base_cf(self.batch, base, handle)!, retaining: self
        ) { [unowned self] bound in
            let options = TombstoneGuard.FallbackReadOptions(bound: bound)
            let base = rocksdb_create_iterator_cf(self.database.db, options.options, handle)!
            return TombstoneGuard.Fallback(
                iterator: rocksdb_writebatch_wi_create_iterator_with_base_cf(self.batch, base, handle)!, readOptions: options)
        }
    }

    public func setSavePoint() { rocksdb_writebatch_wi_set_save_point(self.batch) }

    public func rollbackToSavePoint() throws(RocksDBError) {
        try RocksDBError.check { err in rocksdb_writebatch_wi_rollback_to_save_point(self.batch, err) }
    }
}
