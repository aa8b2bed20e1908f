// Reading the operation log: entries after a given id, in log order.

import EddyModel
import EddyStorage

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

    /// The id of the newest acknowledged log entry, nil when the log is empty.
    public func lastLogID() throws(EddyError) -> LogID? {
        self.committer.durableLogID
    }
}
