// Manual compaction of a key range in the background (see BackgroundCompactions): after a bulk
// write such as an index build, its entries sit in overlapping level-0 files, and every seek
// into the range searches each of them; compacted, the range is one sorted run and a seek
// searches one file.

import CRocksDB
import Synchronization

extension Database {
    /// Queues a compaction of `family`'s keys in [start, end) to the lowest level that holds
    /// any of them, flushing the memtable first when it holds some. Writes and automatic
    /// compactions go on meanwhile. `completion` gets the time it took; it is not called when
    /// the database closes first (close ends a running compaction early and skips queued ones).
    /// Returns false, queueing nothing, when the database is closing or 64 compactions are
    /// already pending (a compaction only speeds reads up; skipping one loses nothing).
    @discardableResult
    public func compactInBackground(
        _ family: ColumnFamily, from start: [UInt8], to end: [UInt8],
        completion: @escaping @Sendable (Duration) -> Void = { _ in }
    ) -> Bool {
        self.compactions.start { [self] in
            let began = ContinuousClock.now
            let options = rocksdb_compactoptions_create()!
            defer { rocksdb_compactoptions_destroy(options) }
            // Not exclusive: automatic compactions and flushes keep running beside it.
            rocksdb_compactoptions_set_exclusive_manual_compaction(options, 0)
            start.withUnsafeBufferPointer { startBytes in
                end.withUnsafeBufferPointer { endBytes in
                    startBytes.withMemoryRebound(to: CChar.self) { startChars in
                        endBytes.withMemoryRebound(to: CChar.self) { endChars in
                            rocksdb_compact_range_cf_opt(
                                self.db, family.handle, options, startChars.baseAddress, start.count, endChars.baseAddress, end.count)
                        }
                    }
                }
            }
            if !self.closed.withLock({ $0 }) { completion(ContinuousClock.now - began) }
        }
    }

    /// Compactions queued by `compactInBackground` that have not finished.
    public var backgroundCompactionsPending: Int { self.compactions.pending }
}
