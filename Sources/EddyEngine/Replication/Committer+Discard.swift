// Discarding a replica's newest entries (a cluster's deposed leader rejoining): the entries
// after the newest one its new leader also has are undone, newest first, by writing back each
// entry's before-images through the tree writer (indexes follow), and deleted from the log, in
// one synced batch. The replica is then exactly the state after that common entry, and resumes
// from it; the next replicated entries' before-image check proves the undo was right.
//
// Invariants: only on a replica (`EngineOptions.leader` set) with no listener and nothing in
// the sync pipeline, so no subscriber ever saw what is undone here and no acknowledgement is
// pending; all or nothing (one batch); at most `countMax` entries (more: refused, nothing done);
// the caller's `keep` sees exactly the entries undone, before anything is undone (it runs on the
// committer thread, which an idle replica can spare for its file write).

import EddyIndexes
import EddyModel
import EddyStorage
import EddyTree
import Synchronization

extension Engine {
    /// Undoes and deletes every log entry after `common` (see the file comment) and returns
    /// them, oldest first; `keep` gets them first, and when it throws nothing is undone.
    /// Refused (nothing changed) with more than `countMax` of them (`limitExceeded`), on a
    /// leader, with listeners attached, or while writes are in flight.
    public func discardEntries(
        after common: LogID, countMax: Int, keep: @escaping @Sendable ([LogEntry]) throws(EddyError) -> Void = { _ in }
    ) async throws(EddyError) -> [LogEntry] {
        guard self.options.leader != nil else {
            throw EddyError(.invalidArgument, "only a replica discards entries; this database is a leader")
        }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<[LogEntry], EddyError>, Never>) in
            let request = ControlRequest.discardEntries(after: common, countMax: countMax, keep: keep, continuation)
            if let refused = self.queue.enqueueControl(request) { request.refuse(refused) }
        }
        return try result.get()
    }
}

extension Committer {
    func discardEntries(
        after common: LogID, countMax: Int, keep: ([LogEntry]) throws(EddyError) -> Void
    ) -> Result<[LogEntry], EddyError> {
        if let failed = self.failed { return .failure(failed) }
        guard self.events.isEmpty, self.syncQueue.isIdle else {
            return .failure(EddyError(.unavailable, "entries are discarded only on an idle replica (no listener, no write in flight)"))
        }
        guard let newest = self.lastAssignedLogID, common < newest else { return .success([]) }
        let commonTerm: UInt64
        var entries: [LogEntry] = []
        do throws(EddyError) {
            guard let stored = try self.readEntry(common) else {
                return .failure(EddyError(.notFound, "log entry \(common) is not in this replica's log; nothing was discarded"))
            }
            commonTerm = stored.term
            try LogScan.forEach(self.database, after: common, through: newest, directory: self.database.path) { id, iterator throws(EddyError) in
                guard entries.count < countMax else { return false }
                entries.append(try LogEntryCodec.decode(id: id, iterator.value))
                return true
            }
            if let last = entries.last, last.id < newest {
                return .failure(
                    EddyError(.limitExceeded, "more than \(countMax) entries follow \(common) in this replica's log; nothing was discarded"))
            }
            try keep(entries)
        } catch {
            return .failure(error)
        }
        self.batch.clear()
        self.treeWriter.indexes.setSavePoint()
        self.treeWriter.beginGroup()
        var scratch: [LogEntry.BeforeImage] = []
        do throws(EddyError) {
            for entry in entries.reversed() {
                // Each location's image comes before its primitive ancestor's (TreeWriter.apply),
                // so writing them back in order ends with the ancestor as it was.
                for image in entry.before {
                    scratch.removeAll(keepingCapacity: true)
                    _ = try self.treeWriter.apply(path: image.path, value: image.value, nowMilliseconds: entry.timestampMilliseconds, before: &scratch)
                }
                self.batch.delete(self.log, Array(entry.id.rawValue.utf8))
            }
        } catch {
            self.treeWriter.endGroup()
            self.treeWriter.indexes.rollbackToSavePoint()
            self.batch.clear()
            self.treeWriter.forgetCachedFacts()
            return .failure(error)
        }
        self.treeWriter.endGroup()
        self.treeWriter.indexes.flushPending()
        do {
            try self.database.write(self.batch, durability: .sync)
        } catch {
            self.treeWriter.forgetCachedFacts()
            let failure = EngineErrors.storage(error, while: "discarding \(entries.count) log entries")
            self.fail(failure)
            return .failure(failure)
        }
        self.treeWriter.forgetCachedFacts()
        self.lastAssignedLogID = common
        self.durable.withLock { $0 = common }
        self.newestTerm.store(commonTerm, ordering: .relaxed)
        return .success(entries)
    }

    private func readEntry(_ id: LogID) throws(EddyError) -> LogEntry? {
        let bytes: [UInt8]?
        do {
            bytes = try self.database.get(self.log, Array(id.rawValue.utf8))
        } catch {
            throw EngineErrors.storage(error, while: "reading log entry \(id)")
        }
        guard let bytes else { return nil }
        return try LogEntryCodec.decode(id: id, bytes)
    }
}
