// Applying the leader's log entries on a follower, through the same tree writer, index
// maintenance and event computation as local writes. The entry keeps the leader's id and
// timestamp and goes into this replica's log unchanged, in the same batch as the tree and
// index changes: the replica's last applied id is its log's newest key, so a crash can neither
// apply an entry twice nor skip one.
//
// Checks: an entry at or before the last applied id is refused (the caller resumes after the
// last applied id, so this only happens on a bug); an entry of an older leadership term than
// the newest applied one is refused (it comes from a deposed leader: fencing by term); the before-images this replica computes must
// equal the leader's, otherwise the replica has diverged and the entry is refused as corruption.
// After a failure every later entry is refused as well (nothing is applied past a gap).

import EddyModel
import EddyStorage
import Synchronization

extension Committer {
    func applyReplicated(_ entry: LogEntry, stored: [UInt8]?) throws(EddyError) -> (WriteOutcome, LogEntry?) {
        if let failure = self.replicationFailure { throw failure }
        do {
            return try self.applyReplicatedEntry(entry, stored: stored)
        } catch {
            self.replicationFailure = error
            throw error
        }
    }

    private func applyReplicatedEntry(_ entry: LogEntry, stored: [UInt8]?) throws(EddyError) -> (WriteOutcome, LogEntry?) {
        if let last = self.lastAssignedLogID, !(last < entry.id) {
            throw EddyError(
                .invalidArgument, "replicated entry \(entry.id) is not after the last applied entry \(last); it was not applied again")
        }
        let newestTerm = self.newestTerm.load(ordering: .relaxed)
        guard entry.term >= newestTerm else {
            throw EddyError(
                .notLeader,
                "replicated entry \(entry.id) has leadership term \(entry.term), older than term \(newestTerm) of the newest entry applied here; it comes from a deposed leader and was not applied"
            )
        }
        let listening = !self.events.isEmpty
        var before: [LogEntry.BeforeImage] = []
        for change in entry.changes {
            let path = entry.location.appending(change.path)
            let image = before.count
            let written = try self.treeWriter.apply(path: path, value: change.value, nowMilliseconds: entry.timestampMilliseconds, before: &before)
            if listening {
                try self.events.changed(path: path, written: written, before: before[image].value, update: entry.kind == .update)
                try self.events.droppedPriorities(before[(image + 1)...], update: entry.kind == .update)
            }
        }
        guard before == entry.before else {
            throw EddyError(
                .corruption,
                "replicated entry \(entry.id) at \(entry.location.abbreviated): this replica's values before it differ from the leader's; the replica has diverged (bootstrap it again from a snapshot)"
            )
        }
        self.batch.put(self.log, Array(entry.id.rawValue.utf8), stored ?? LogEntryCodec.encode(entry))
        if listening { self.events.endWrite(logID: entry.id, silenced: [], canRead: self.canReadInGroup) }
        self.lastAssignedLogID = entry.id
        self.newestTerm.store(entry.term, ordering: .relaxed)
        return (.committed(CommittedWrite(logID: entry.id, pushedKey: nil, value: .null, exportValue: .null)), entry)
    }
}
