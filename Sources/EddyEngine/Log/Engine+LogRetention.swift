// Bounding the operation log. An entry may be pruned when it is older than `retainSeconds` or
// when the newer entries alone already take `retainBytes`; but never the newest entry (ids stay
// monotonic across restarts because the newest one is kept), never one a connected follower
// still needs (the leader passes the oldest applied id as `keep`) unless the log exceeds the
// hard cap `retainBytesMax`. Sizes are RocksDB's estimates of the log's SST files (compressed);
// entries still in the memtable are not counted.
//
// Pruning deletes a range of the log and records the last pruned id in `meta`
// ("log-pruned-through"), in one synced batch: from then on a new follower needs a snapshot,
// and resuming (SSE Last-Event-ID, `since`) before that id is refused.

import EddyModel
import EddyStorage
import EddyTree
import Logging

public struct LogRetention: Sendable, Equatable {
    /// Entries older than this are pruned. Default 7 days.
    public var retainSeconds: Double = 7 * 24 * 3600
    /// Entries beyond the newest `retainBytes` are pruned. Default 1 GiB.
    public var retainBytes: UInt64 = 1 << 30
    /// Above this, entries are pruned even when a follower still needs them. Default 8 GiB.
    public var retainBytesMax: UInt64 = 8 << 30

    public init() {}
}

extension Engine {
    /// The newest pruned entry's id; nil when the log holds every entry since the first.
    public func logPrunedThrough() throws(EddyError) -> LogID? {
        try Self.logPrunedThrough(in: self.database)
    }

    static func logPrunedThrough(in database: Database) throws(EddyError) -> LogID? {
        try MetaKeys.readLogPrunedThrough(in: database)
    }

    /// Prunes what `retention` allows (see the file comment), keeping every entry from `keep`
    /// on unless the log is above the hard cap. Returns the newest pruned id, nil when nothing
    /// was pruned.
    @discardableResult
    public func pruneLog(_ retention: LogRetention, keep: LogID?, nowMilliseconds: UInt64) throws(EddyError) -> LogID? {
        // A stopped engine (a storage failure, or opened read-only) writes nothing, pruning too.
        guard self.committer.failed == nil else { return nil }
        guard let newest = self.committer.durableLogID, let oldest = try self.firstLogID(), oldest < newest else { return nil }
        let log = self.database.columnFamily(ColumnFamilies.log)
        let end = Array(newest.rawValue.utf8)
        func size(from id: LogID) throws(EddyError) -> UInt64 {
            do {
                return try self.database.approximateSize(log, from: Array(id.rawValue.utf8), to: end)
            } catch {
                throw EngineErrors.storage(error, while: "estimating the log's size")
            }
        }
        /// The smallest timestamp cut whose newer entries take at most `bytes`.
        func cut(keepingAtMost bytes: UInt64) throws(EddyError) -> LogID? {
            guard try size(from: oldest) > bytes else { return nil }
            var low = oldest.timestampMilliseconds
            var high = newest.timestampMilliseconds
            while low < high {
                let middle = low + (high - low) / 2
                if try size(from: LogID.first(atMilliseconds: middle)) > bytes { low = middle + 1 } else { high = middle }
            }
            return LogID.first(atMilliseconds: low)
        }
        var cutAt: LogID? = nil
        let ageMilliseconds = UInt64(max(0, retention.retainSeconds) * 1000)
        if nowMilliseconds > ageMilliseconds { cutAt = LogID.first(atMilliseconds: nowMilliseconds - ageMilliseconds) }
        if let bySize = try cut(keepingAtMost: retention.retainBytes), cutAt.map({ $0 < bySize }) ?? true { cutAt = bySize }
        if let keep, let candidate = cutAt, keep < candidate { cutAt = keep }
        if let hard = try cut(keepingAtMost: retention.retainBytesMax), cutAt.map({ $0 < hard }) ?? true { cutAt = hard }
        guard var cutAt, oldest < cutAt else { return nil }
        if newest < cutAt { cutAt = newest }
        // The newest entry before the cut is the last one pruned.
        let iterator = self.database.makeIterator(log)
        iterator.seek(Array(cutAt.rawValue.utf8))
        if iterator.isValid { iterator.previous() } else { iterator.seekToLast() }
        guard iterator.isValid, let last = LogID(String(decoding: iterator.key, as: UTF8.self)), last < cutAt else { return nil }
        let batch = WriteBatch()
        batch.deleteRange(log, from: Array(oldest.rawValue.utf8), to: Array(cutAt.rawValue.utf8))
        batch.put(self.database.columnFamily(ColumnFamilies.meta), MetaKeys.logPrunedThrough, Array(last.rawValue.utf8))
        do {
            try self.database.write(batch, durability: .sync)
        } catch {
            throw EngineErrors.storage(error, while: "pruning the log")
        }
        self.logger.info("pruned the log", metadata: ["eddy.pruned_through": "\(last)", "eddy.oldest_kept": "\(cutAt)"])
        return last
    }
}

extension Engine {
    /// Whether every entry after `id` is still in the log: `id` is the newest pruned entry or
    /// one still kept. An id the log never had (another database's, a typo) is not.
    public func canResume(after id: LogID) throws(EddyError) -> Bool {
        if let pruned = try self.logPrunedThrough() {
            if id < pruned { return false }
            if id == pruned { return true }
        }
        return try self.containsLogEntry(id)
    }
}
