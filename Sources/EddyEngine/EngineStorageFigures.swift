// What the storage looks like now, read when metrics are scraped (never on the write path):
// RocksDB's own figures summed over the column families, the log's size and retention point.

import EddyModel
import EddyStorage
import EddyTree

public struct EngineStorageFigures: Sendable {
    /// Bytes in memtables (active and immutable), all column families.
    public var memtableBytes: UInt64?
    /// Bytes of live SST files, all column families.
    public var sstBytes: UInt64?
    /// RocksDB's estimate of bytes compaction still has to rewrite.
    public var pendingCompactionBytes: UInt64?
    /// 1 while RocksDB stops writes (too many memtables or L0 files), else 0.
    public var writesStopped: UInt64?
    /// The rate RocksDB slows writes to (bytes/s); 0 when writes are not delayed.
    public var delayedWriteRateBytesPerSecond: UInt64?
    /// RocksDB's estimate of the operation log's size on disk (compressed SSTs).
    public var logBytes: UInt64?
    /// The newest entry's time (ms since the epoch); nil for an empty log.
    public var lastEntryMilliseconds: UInt64?
    /// The retention point: the newest pruned entry's time (ms); nil when never pruned.
    public var prunedThroughMilliseconds: UInt64?
}

extension Engine {
    /// The storage's figures now (RocksDB property reads and two small log reads).
    public func storageFigures() -> EngineStorageFigures {
        let database = self.database
        var figures = EngineStorageFigures()
        figures.memtableBytes = database.integerPropertySummed("rocksdb.cur-size-all-mem-tables")
        figures.sstBytes = database.integerPropertySummed("rocksdb.live-sst-files-size")
        figures.pendingCompactionBytes = database.integerPropertySummed("rocksdb.estimate-pending-compaction-bytes")
        figures.writesStopped = database.integerProperty("rocksdb.is-write-stopped")
        figures.delayedWriteRateBytesPerSecond = database.integerProperty("rocksdb.actual-delayed-write-rate")
        figures.logBytes = try? database.approximateSize(
            database.columnFamily(ColumnFamilies.log), from: [], to: [UInt8](repeating: 0xFF, count: 32))
        figures.lastEntryMilliseconds = (try? self.lastLogID())??.timestampMilliseconds
        figures.prunedThroughMilliseconds = (try? self.logPrunedThrough())??.timestampMilliseconds
        return figures
    }
}
