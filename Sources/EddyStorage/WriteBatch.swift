// A plain write batch (no index of its own): cheaper than `WriteBatchWithIndex` when nothing
// reads through the batch, e.g. index build chunks. Supports range deletes, which a batch with
// index cannot hold. Not thread-safe.

import CRocksDB

public final class WriteBatch {
    let batch: OpaquePointer

    public init() {
        self.batch = rocksdb_writebatch_create()!
    }

    /// A copy of `batch`'s changes, in their order, without its index: what is added to the
    /// copy costs no index insert, for changes nothing reads through the batch before it is
    /// written (the committer's index entries at a group's end).
    public init(copying batch: WriteBatchWithIndex) {
        var size = 0
        let data = rocksdb_writebatch_wi_data(batch.batch, &size)
        self.batch = rocksdb_writebatch_create_from(data, size)!
    }

    deinit {
        rocksdb_writebatch_destroy(self.batch)
    }

    public var count: Int { Int(rocksdb_writebatch_count(self.batch)) }

    /// Bytes of the batch's serialized representation.
    public var byteCount: Int {
        var size = 0
        _ = rocksdb_writebatch_data(self.batch, &size)
        return size
    }

    public func clear() { rocksdb_writebatch_clear(self.batch) }

    public func put(_ family: ColumnFamily, _ key: [UInt8], _ value: [UInt8]) {
        key.withUnsafeBufferPointer { k in
            value.withUnsafeBufferPointer { v in
                k.withMemoryRebound(to: CChar.self) { k in
                    v.withMemoryRebound(to: CChar.self) { v in
                        rocksdb_writebatch_put_cf(self.batch, family.handle, k.baseAddress, k.count, v.baseAddress, v.count)
                    }
                }
            }
        }
    }

    public func delete(_ family: ColumnFamily, _ key: [UInt8]) {
        key.withUnsafeBufferPointer { k in
            k.withMemoryRebound(to: CChar.self) { rocksdb_writebatch_delete_cf(self.batch, family.handle, $0.baseAddress, $0.count) }
        }
    }

    /// Deletes every key in [start, end).
    ///
    /// Precondition: in a family with a memtable insert hint, `start` is shorter than the hint's
    /// prefix. RocksDB 7.8 (Debian 12's) files a range deletion's start key under the same
    /// hints as the family's point keys but inserts it into a different skiplist, whose
    /// search the hint then corrupts (an assertion in RocksDB's own build; upstream keeps range
    /// deletions out of the hints since). A start key outside the prefix's domain takes no hint.
    public func deleteRange(_ family: ColumnFamily, from start: [UInt8], to end: [UInt8]) {
        if let hintBytes = family.insertHintPrefixBytes {
            precondition(
                start.count < hintBytes,
                "a range deletion in \(family.name) must start with fewer than \(hintBytes) bytes (its memtable insert hint)")
        }
        start.withUnsafeBufferPointer { s in
            end.withUnsafeBufferPointer { e in
                s.withMemoryRebound(to: CChar.self) { s in
                    e.withMemoryRebound(to: CChar.self) { e in
                        rocksdb_writebatch_delete_range_cf(self.batch, family.handle, s.baseAddress, s.count, e.baseAddress, e.count)
                    }
                }
            }
        }
    }
}

extension Database {
    /// Atomically applies every change in `batch`.
    public func write(_ batch: WriteBatch, durability: WriteDurability) throws(RocksDBError) {
        let options = self.writeOptions(durability)
        try RocksDBError.check { err in rocksdb_write(self.db, options, batch.batch, err) }
    }
}
