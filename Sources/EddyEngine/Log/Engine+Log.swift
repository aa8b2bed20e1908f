// Folder Log/: the operation log family: reads of entries after an id, the one scan over the
// family, retention, and the read-only log used beside a running daemon (entries and their
// codec are the EddyLog target). Invariant: ids strictly increase; an entry is never rewritten.
//
// Reading the operation log: entries after a given id, in log order.

import EddyModel
import EddyStorage
import EddyTree

extension Engine {
    /// Up to `limit` entries with ids greater than `after` (from the start when nil), in log
    /// order, never past the newest acknowledged entry. Blocking; `limit` is capped at
    /// `Limits.logReadCountMax`.
    public func readLogEntries(after: LogID?, limit: Int) throws(EddyError) -> [LogEntry] {
        var entries: [LogEntry] = []
        for stored in try self.readStoredLogEntries(after: after, limit: min(max(0, limit), Limits.logReadCountMax), bytesMax: .max) {
            entries.append(try LogEntryCodec.decode(id: stored.id, stored.bytes))
        }
        return entries
    }

    public func logEntries(after: LogID?, limit: Int) async throws(EddyError) -> [LogEntry] {
        try await self.onReader { () throws(EddyError) in try self.readLogEntries(after: after, limit: limit) }
    }

    /// A sample of the log's ids, newest first, for finding the newest entry another log shares:
    /// the newest `denseCount` ids, then the ids 2x, 4x, 8x... `denseCount` entries back, to
    /// `depthMax` entries back at most. Blocking; reads keys only.
    public func sampleLogIDs(denseCount: Int = 256, depthMax: Int = 65_536) throws(EddyError) -> [LogID] {
        let iterator = self.database.makeIterator(self.database.columnFamily(ColumnFamilies.log))
        iterator.seekToLast()
        var ids: [LogID] = []
        var depth = 0
        var nextSampled = denseCount * 2
        while iterator.isValid, depth < depthMax {
            if depth < denseCount || depth == nextSampled - 1 {
                let key = String(decoding: iterator.key, as: UTF8.self)
                guard let id = LogID(key) else { throw EddyError(.corruption, "log key \(key.debugDescription) in \(self.directory) is not a push ID") }
                ids.append(id)
                if depth == nextSampled - 1 { nextSampled *= 2 }
            }
            depth += 1
            iterator.previous()
        }
        do {
            try iterator.checkError()
        } catch {
            throw EngineErrors.storage(error, while: "sampling the log in \(self.directory)")
        }
        return ids
    }

    /// The id of the newest acknowledged log entry, nil when the log is empty.
    public func lastLogID() throws(EddyError) -> LogID? {
        self.committer.durableLogID
    }

    /// How many acknowledged entries come after `after` (every one when nil), counting at most
    /// `countMax` (the answer then is `countMax`). Blocking; reads keys only, so counting
    /// 100,000 entries costs a few milliseconds (a follower's lag in entries, for `/metrics`).
    public func countLogEntries(after: LogID?, countMax: Int) throws(EddyError) -> Int {
        guard let durable = self.committer.durableLogID else { return 0 }
        if let after, !(after < durable) { return 0 }
        var count = 0
        guard countMax > 0 else { return 0 }
        try LogScan.forEach(self.database, after: after, through: durable, directory: self.directory) { _, _ in
            count += 1
            return count < countMax
        }
        return count
    }
}
