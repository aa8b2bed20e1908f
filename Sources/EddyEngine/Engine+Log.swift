// Reading the operation log: entries after a given id, in log order.

import EddyModel
import EddyStorage

extension Engine {
    /// Up to `limit` entries with ids greater than `after` (from the start when nil), in log
    /// order, never past the newest acknowledged entry. Blocking; `limit` is capped at
    /// `Limits.logReadCountMax`.
    public func readLogEntries(after: LogID?, limit: Int) throws(EddyError) -> [LogEntry] {
        let iterator = self.database.makeIterator(self.database.columnFamily(ColumnFamilies.log))
        if let after {
            iterator.seek(Array(after.rawValue.utf8))
            if iterator.isValid, iterator.key == Array(after.rawValue.utf8) { iterator.next() }
        } else {
            iterator.seekToFirst()
        }
        var entries: [LogEntry] = []
        let count = min(max(0, limit), Limits.logReadCountMax)
        guard let durable = self.committer.durableLogID else { return [] }
        while iterator.isValid, entries.count < count {
            let key = String(decoding: iterator.key, as: UTF8.self)
            guard let id = LogID(key) else { throw EddyError(.corruption, "log key \(key.debugDescription) is not a push ID") }
            if durable < id { break }  // written, not yet acknowledged
            entries.append(try LogEntryCodec.decode(id: id, iterator.value))
            iterator.next()
        }
        do {
            try iterator.checkError()
        } catch {
            throw EngineErrors.storage(error, while: "reading the log")
        }
        return entries
    }

    public func logEntries(after: LogID?, limit: Int) async throws(EddyError) -> [LogEntry] {
        try await self.onReader { () throws(EddyError) in try self.readLogEntries(after: after, limit: limit) }
    }

    /// The id of the newest acknowledged log entry, nil when the log is empty.
    public func lastLogID() throws(EddyError) -> LogID? {
        self.committer.durableLogID
    }
}
