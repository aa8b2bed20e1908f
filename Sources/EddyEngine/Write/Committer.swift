// Folder Write/: the write path from a validated request to a durable batch: the bounded commit
// queue, this committer (the only mutator), the syncer hand-off, the tree writer and the disk
// reserve. Invariant: a write's tree changes, index entries and log entry go in one batch.
//
// The single committer: the only code that mutates a database. It runs on its own thread,
// takes groups of queued writes, applies each to one write batch (tree changes and the log
// entry together), writes the batch once (one fsync per group under `sync` durability), and
// only then resumes the writers.
//
// Invariants:
// 1. Log IDs are assigned here, in commit order, each greater than every key in the log.
// 2. A write's tree changes and its log entry are in the same RocksDB write batch.
// 3. A writer is acknowledged only after the batch containing its write was written with the
//    configured durability; under `sync` the batch is written without fsync and the WAL is
//    then fsynced (by this thread or the syncer, see `SyncQueue`) before any acknowledgement,
//    so the committer applies the next group while the previous one syncs. Acknowledgements
//    and commit observers follow log order. A refused write (precondition failed) changes
//    nothing. (A read may see a group in the microseconds between its write and its fsync;
//    it is not acknowledged, and only a power loss, not a process crash, could undo it.)
// 4. After a storage failure the engine fails stop: every later write is refused.
// Thread-safety: `run()` is called once, on the committer thread; nothing else touches `batch`.
// The syncer thread only calls `syncAndAcknowledge`.

import EddyIndexes
import EddyEvents
import EddyModel
import EddyStorage
import EddyTree
import Foundation
import Logging
import Synchronization

final class Committer: @unchecked Sendable {
    // @unchecked: `batch`, `ids` and `lastSync` are only used by the committer thread.
    let database: Database
    private let tree: ColumnFamily
    let log: ColumnFamily
    let batch: WriteBatchWithIndex
    let treeWriter: TreeWriter
    /// Live events of the writes this committer applies.
    let events: EventRouter
    /// The newest log id handed out (durable or not): what a listener attached now reflects.
    var lastAssignedLogID: LogID?
    /// On a follower: the first replicated entry that failed; every later one is refused too,
    /// so nothing is applied past a gap.
    var replicationFailure: EddyError?
    /// The term of the newest entry applied: entries never go back to an older term (a local
    /// group whose proven term is older is refused, a replicated entry of an older term too).
    /// Written by the committer thread only.
    let newestTerm: Atomic<UInt64>
    /// The term the local entries of the group being applied carry.
    private var groupTerm: UInt64 = 0
    let syncQueue = SyncQueue(capacity: 8)
    private var ids: PushIDGenerator
    let clock: any MillisecondClock
    private let queue: CommitQueue
    let options: EngineOptions
    /// Commit group sizes and batch/fsync times (the engine's own set counts outcomes).
    let metrics: EngineMetrics
    let spaceReserve: DiskSpaceReserve
    let logger: Logger
    private let failure: Mutex<EddyError?>
    /// The newest log id that is durable under the configured durability (acknowledged).
    /// Log readers stop here, so nobody (a follower, `eddy log`) sees an entry that a power
    /// loss could still take back.
    let durable: Mutex<LogID?>
    private let onCommit: @Sendable ([LogEntry]) -> Void
    /// When the oldest write not yet fsynced under `batched` durability was written
    /// (monotonic, so a wall-clock step cannot stretch the interval).
    private var unsyncedSince: ContinuousClock.Instant? = nil
    /// The index catalog as the committer last wrote it; `catalog` publishes each version.
    var definitions: [IndexDefinition]
    var nextIndexID: UInt32
    let catalog: IndexCatalog
    /// The security rules writes are checked against (`Committer+Access.swift`); replaced by a
    /// rules change, between groups, and published to `securityHolder` for readers.
    var security: SecurityRules
    /// The version of `security` (writes checked before queuing carry the version they used).
    var securityVersion: UInt64
    let securityHolder: SecurityRulesHolder
    /// When the next index build step may run (`indexBuildPauseMilliseconds` after the last).
    private var nextBuildStep: ContinuousClock.Instant? = nil
    /// When a running build next logs its progress (every 10 s).
    var nextBuildProgressLog = ContinuousClock.now

    init(
        database: Database, lastLogID: LogID?, lastTerm: UInt64, clock: any MillisecondClock, queue: CommitQueue, options: EngineOptions,
        spaceReserve: DiskSpaceReserve, catalog: IndexCatalog, security: SecurityRulesHolder, nextIndexID: UInt32, logger: Logger, onCommit: @escaping @Sendable ([LogEntry]) -> Void
    ) {
        self.database = database
        self.tree = database.columnFamily(ColumnFamilies.tree)
        self.log = database.columnFamily(ColumnFamilies.log)
        self.batch = WriteBatchWithIndex(database: database)
        let priority = database.columnFamilyIfPresent(ColumnFamilies.priority)
        let holdsPriorities = priority.map { family in
            let iterator = database.makeIterator(family)
            iterator.seekToFirst()
            return iterator.isValid
        } ?? false
        self.treeWriter = TreeWriter(
            tree: self.tree, index: database.columnFamily(ColumnFamilies.index), priority: priority, mayHoldPriorities: holdsPriorities,
            batch: self.batch)
        self.events = EventRouter(database: database, group: self.treeWriter)
        self.lastAssignedLogID = lastLogID
        self.newestTerm = Atomic(lastTerm)
        self.catalog = catalog
        self.securityHolder = security
        (self.security, self.securityVersion) = security.versioned
        self.definitions = catalog.definitions
        self.nextIndexID = nextIndexID
        self.treeWriter.indexes.definitions = self.definitions
        self.ids = PushIDGenerator(after: lastLogID)
        self.clock = clock
        self.queue = queue
        self.options = options
        self.metrics = EngineMetrics(namespace: options.namespace)
        self.spaceReserve = spaceReserve
        self.logger = logger
        self.failure = Mutex(nil)
        self.durable = Mutex(lastLogID)
        self.onCommit = onCommit
    }

    var durableLogID: LogID? { self.durable.withLock { $0 } }

    /// The error that stopped the committer, if any.
    var failed: EddyError? { self.failure.withLock { $0 } }

    func run() {
        let syncerDone = DispatchSemaphore(value: 0)
        let syncer = Thread { [self] in
            ThreadName.set("eddy-syncer")
            self.runSyncer()
            syncerDone.signal()
        }
        syncer.name = "eddy-syncer"
        syncer.start()
        defer {
            self.syncQueue.stop()
            syncerDone.wait()
        }
        while true {
            let syncDue = self.unsyncedSince.map { $0.advanced(by: self.options.batchedSyncInterval) }
            let building = self.hasBuildWork
            var wakeAt = syncDue
            if building {
                let step = self.nextBuildStep ?? .now
                wakeAt = wakeAt.map { min($0, step) } ?? step
            }
            // NSCondition waits on wall time; derive that deadline from the monotonic one.
            let deadline = wakeAt.map { Date().addingTimeInterval((ContinuousClock.now.duration(to: $0)).seconds) }
            guard let group = self.queue.takeGroup(
                    max: max(1, self.options.commitGroupCountMax), bytesMax: Limits.commitGroupBytesMax, deadline: deadline) else { break }
            if let syncDue, group.isEmpty || ContinuousClock.now >= syncDue {
                self.syncWAL()
            }
            if !group.isEmpty { self.commit(group) }
            // Controls after the writes taken with them, which arrived before every waiting
            // control (`CommitQueue.takeGroup`): a listen sees those in its first value and hears
            // the writes that arrived after it as events.
            for control in self.queue.takeControls() { self.run(control) }
            if building, self.nextBuildStep.map({ ContinuousClock.now >= $0 }) ?? true {
                self.buildStep()
                let pause = self.options.indexBuildPauseMilliseconds
                self.nextBuildStep = pause > 0 ? ContinuousClock.now.advanced(by: .milliseconds(pause)) : nil
            }
        }
        if self.unsyncedSince != nil { self.syncWAL() }
    }

    private func syncWAL() {
        do {
            try self.database.flushWAL(sync: true)
            self.unsyncedSince = nil
        } catch {
            self.fail(EngineErrors.storage(error, while: "syncing the write-ahead log"))
        }
    }

    private func commit(_ group: [PendingWrite]) {
        if let failed = self.failed {
            for write in group { write.completion(.failure(failed)) }
            return
        }
        // A cluster's leader applies local writes only while it provably holds the lease, and
        // stamps them with its term.
        self.groupTerm = self.newestTerm.load(ordering: .relaxed)
        if let fence = self.options.writeFence, group.contains(where: { $0.replicated == nil }) {
            switch fence() {
            case .failure(let refusal):
                for write in group { write.completion(.failure(refusal)) }
                return
            case .success(let term) where term < self.groupTerm:
                let refusal = EddyError(
                    .notLeader, "this node's leadership term \(term) is older than term \(self.groupTerm) of its newest log entry; it is not the leader now")
                for write in group { write.completion(.failure(refusal)) }
                return
            case .success(let term):
                self.groupTerm = term
            }
        }
        // Local writes only: a follower applies what its leader committed (see DiskSpaceReserve).
        if group.contains(where: { $0.replicated == nil }),
            let refusal = self.spaceReserve.refusal(groupBytes: group.reduce(0) { $0 + $1.approximateBytes })
        {
            for write in group { write.completion(.failure(refusal)) }
            return
        }
        self.batch.clear()
        var outcomes: [Result<WriteOutcome, EddyError>] = []
        var entries: [LogEntry] = []
        outcomes.reserveCapacity(group.count)
        self.treeWriter.beginGroup()
        for write in group {
            self.batch.setSavePoint()
            self.treeWriter.indexes.setSavePoint()
            do {
                let (outcome, entry) = try self.apply(write)
                outcomes.append(.success(outcome))
                if let entry { entries.append(entry) }
            } catch {
                // Nothing of a failed write may stay in the batch. A rollback rebuilds the
                // batch index, so the group iterator is dropped first and made anew.
                self.treeWriter.endGroup()
                do {
                    try self.batch.rollbackToSavePoint()
                } catch {
                    self.fail(EngineErrors.storage(error, while: "rolling back a failed write"))
                }
                self.treeWriter.indexes.rollbackToSavePoint()
                self.events.abortWrite()
                self.treeWriter.forgetCachedFacts()
                self.treeWriter.beginGroup()
                outcomes.append(.failure(error))
                if error.code == .corruption || error.code == .io || error.code == .insufficientStorage { self.fail(error) }
            }
        }
        self.treeWriter.endGroup()
        // Nothing reads the group's last index entry changes before the write: they go into a
        // plain copy of the batch, not through the batch's own index.
        var plainBatch: WriteBatch? = nil
        if self.treeWriter.indexes.hasPending {
            let plain = WriteBatch(copying: self.batch)
            self.treeWriter.indexes.flushPending(into: plain)
            plainBatch = plain
        }
        if let failed = self.failed {
            for write in group { write.completion(.failure(failed)) }
            return
        }
        // Alone (nothing waiting, syncer idle), a synced write acknowledges right here with one
        // fsync and no thread hop; otherwise the group is pipelined through the syncer.
        let alone = self.options.durability == .sync && self.queue.isEmpty && self.syncQueue.isIdle
        // A follower's group holds only entries its leader already made durable, so their
        // events need not wait for this replica's own fsync: they go out as soon as the batch is
        // in the memtable (readers see it there too). A crash before the fsync loses nothing a
        // subscriber saw: the follower resumes after its last durable entry and applies the rest
        // again from the leader. The acknowledgements (`applied`, which --sync-followers counts)
        // still wait for the fsync.
        let eventsBeforeSync = self.deliversBeforeSync && !entries.isEmpty
        if !entries.isEmpty {
            self.metrics.recordGroup(writes: group.count)
            let start = ContinuousClock.now
            defer { self.metrics.commitWrite.recordSince(start) }
            do {
                let durability = alone && !eventsBeforeSync ? WriteDurability.sync : self.storageDurability
                if let plainBatch {
                    try self.database.write(plainBatch, durability: durability)
                } else {
                    try self.database.write(self.batch, durability: durability)
                }
                if self.options.durability == .batched, self.unsyncedSince == nil { self.unsyncedSince = .now }
                self.compactLargeRemovals()
            } catch {
                self.treeWriter.forgetCachedFacts()
                let failure = EngineErrors.storage(error, while: "committing \(entries.count) writes")
                self.fail(failure)
                for write in group { write.completion(.failure(failure)) }
                return
            }
        }
        var deliveries = self.events.takeDeliveries()
        if eventsBeforeSync {
            for delivery in deliveries { delivery() }
            deliveries = []
        }
        let ticket = SyncTicket(writes: group, outcomes: outcomes, entries: entries, deliveries: deliveries)
        // (A replica's group always goes through the syncer: an fsync that stalls there holds
        // back acknowledgements only, while the committer goes on applying and delivering.)
        guard self.options.durability == .sync, !alone || eventsBeforeSync else {
            self.acknowledge([ticket])
            return
        }
        if entries.isEmpty {
            // Only refusals: nothing to sync, but answer after any group still syncing.
            if self.syncQueue.isIdle { self.acknowledge([ticket]) } else { self.syncQueue.enqueue(ticket) }
            return
        }
        // Pipeline: while the syncer fsyncs this group, the committer applies the next one.
        self.syncQueue.enqueue(ticket)
    }

    /// A write that deleted many leaves left as many tombstones, in the memtable first: every
    /// seek near them (a GET of the location, a write under it) walks them until compaction
    /// drops them, which a memtable that is not full may not reach for long (a 1.8 M-leaf
    /// removal: every GET of the location took 0.29 s). A background compaction of the range
    /// (flushing the memtable first) drops them with the data they delete.
    private func compactLargeRemovals() {
        let removals = self.treeWriter.takeLargeRemovals()
        guard !removals.isEmpty else { return }
        let tree = self.database.columnFamily(ColumnFamilies.tree)
        for prefix in removals {
            guard let end = TombstoneGuard.end(of: prefix) else { continue }
            let logger = self.logger
            self.database.compactInBackground(tree, from: prefix, to: end) { took in
                logger.info("compacted a large removal", metadata: ["eddy.seconds": "\(took.seconds)"])
            }
        }
    }

    /// A follower's replica (synced durability) delivers events before its own fsync: see
    /// `commit`. Its groups are all replicated entries (client writes are refused).
    var deliversBeforeSync: Bool { self.options.leader != nil && self.options.durability == .sync }

    /// Delivers events outside a group, after everything already in the sync pipeline (on a
    /// replica every earlier group's events are out already, so at once).
    func deliver(_ deliveries: [Delivery]) {
        if self.deliversBeforeSync {
            for delivery in deliveries { delivery() }
            return
        }
        let ticket = SyncTicket(writes: [], outcomes: [], entries: [], deliveries: deliveries)
        if self.syncQueue.isIdle { self.acknowledge([ticket]) } else { self.syncQueue.enqueue(ticket) }
    }

    /// The syncer thread: fsync once for every group written so far, then acknowledge them.
    private func runSyncer() {
        while let tickets = self.syncQueue.take() {
            self.syncAndAcknowledge(tickets)
            self.syncQueue.finished()
        }
    }

    private func syncAndAcknowledge(_ tickets: [SyncTicket]) {
        // After a failed fsync, a later fsync may "succeed" although the kernel dropped the
        // earlier pages (Linux clears the error once reported), so nothing written after a
        // failure is ever acknowledged.
        if let failed = self.failed {
            for ticket in tickets {
                for write in ticket.writes { write.completion(.failure(failed)) }
            }
            return
        }
        do {
            let start = ContinuousClock.now
            try self.database.flushWAL(sync: true)
            self.metrics.fsync.recordSince(start)
        } catch {
            let failure = EngineErrors.storage(
                error, while: "syncing the write-ahead log (the write may or may not be durable; the database stopped accepting writes)")
            self.fail(failure)
            for ticket in tickets {
                for write in ticket.writes { write.completion(.failure(failure)) }
            }
            return
        }
        self.acknowledge(tickets)
    }

    /// Resumes the writers and tells observers, in log order.
    private func acknowledge(_ tickets: [SyncTicket]) {
        if let last = tickets.last(where: { !$0.entries.isEmpty })?.entries.last?.id {
            self.durable.withLock { $0 = last }
        }
        for ticket in tickets {
            // Events first: a writer that sees its write acknowledged can rely on every
            // listener having been handed the write's events.
            for delivery in ticket.deliveries { delivery() }
            for (write, outcome) in zip(ticket.writes, ticket.outcomes) { write.completion(outcome) }
            if !ticket.entries.isEmpty { self.onCommit(ticket.entries) }
        }
    }

    var storageDurability: WriteDurability {
        switch self.options.durability {
        case .sync: return .buffered  // fsynced by `syncAndAcknowledge` before any ack
        case .batched: return .buffered
        case .none: return .noWAL
        }
    }

    func fail(_ error: EddyError) {
        self.failure.withLock { current in
            if current == nil {
                self.logger.critical("engine stopped accepting writes", metadata: ["eddy.error": "\(error)"])
                current = error
            }
        }
    }

    /// Applies one write to the batch; returns its outcome and log entry (nil when refused).
    private func apply(_ write: PendingWrite) throws(EddyError) -> (WriteOutcome, LogEntry?) {
        if let entry = write.replicated { return try self.applyReplicated(entry, stored: write.replicatedBytes) }
        let writer = self.treeWriter
        let operation = write.operation
        let now = self.clock.nowMilliseconds()
        let id = self.ids.next(nowMilliseconds: now)
        // Rules first: a 412 answers the current value, which a caller denied the write or the
        // read must not see.
        // A write checked before it was queued under the rules still in force needs no second
        // check (`Engine.precheck`); any other client write is checked here.
        if !write.access.isAdmin, write.checkedUnderRules != self.securityVersion {
            try self.authorize(operation, write.access, nowMilliseconds: now, pushedKey: id.rawValue)
        }
        if let ifMatch = write.ifMatch {
            // The ETag covers the priorities, as Firebase's hash does: a change of priority
            // alone makes a conditional write stale.
            let current = try writer.currentExportValue(at: operation.location)
            let etag = ETag.of(current)
            if etag != ifMatch {
                // The 412 answers the value and its ETag: only for a caller who may read them
                // (a write-only caller gets Firebase's denial, and nothing is written).
                guard write.access.isAdmin || self.canRead(operation.location, query: nil, write.access, inGroup: true) else {
                    throw Engine.permissionDenied
                }
                return (.preconditionFailed(current: current, etag: etag), nil)
            }
        }
        let listening = !self.events.isEmpty
        var before: [LogEntry.BeforeImage] = []
        let kind: LogEntry.Kind
        var changes: [LogEntry.Change] = []
        var pushedKey: String? = nil
        var written: Value
        switch operation {
        // `before` gets the image of each change's own location first (`TreeWriter.apply`).
        case .set(let path, let value):
            kind = .set
            written = try writer.apply(path: path, value: value, nowMilliseconds: now, before: &before)
            changes.append(.init(path: .root, value: written))
            if listening {
                try self.events.changed(path: path, written: written, before: before[0].value, update: false)
                try self.events.droppedPriorities(before[1...], update: false)
            }
        case .remove(let path):
            kind = .remove
            written = try writer.apply(path: path, value: .null, nowMilliseconds: now, before: &before)
            changes.append(.init(path: .root, value: .null))
            if listening {
                try self.events.changed(path: path, written: .null, before: before[0].value, update: false)
                try self.events.droppedPriorities(before[1...], update: false)
            }
        case .push(let path, let value):
            kind = .push
            pushedKey = id.rawValue
            let child = Path(validatedKeys: [id.rawValue])
            written = try writer.apply(path: path.appending(child), value: value, nowMilliseconds: now, before: &before)
            changes.append(.init(path: child, value: written))
            if listening {
                try self.events.changed(path: path.appending(child), written: written, before: before[0].value, update: false)
                try self.events.droppedPriorities(before[1...], update: false)
            }
        case .update(let path, let requested):
            kind = .update
            var object: [String: Value] = [:]
            for change in LogEntry.Change.inMergeOrder(requested) {
                let image = before.count
                let resolved = try writer.apply(
                    path: path.appending(change.path), value: change.value, nowMilliseconds: now, before: &before)
                changes.append(.init(path: change.path, value: resolved))
                if listening {
                    try self.events.changed(path: path.appending(change.path), written: resolved, before: before[image].value, update: true)
                    try self.events.droppedPriorities(before[(image + 1)...], update: true)
                }
                object[change.path.keys.joined(separator: "/")] = resolved
            }
            written = .object(object)
        }
        let entry = LogEntry(
            id: id, kind: kind, timestampMilliseconds: now, location: operation.location, changes: changes, before: before,
            term: self.groupTerm)
        let encoded = LogEntryCodec.encode(entry)
        guard encoded.count <= self.options.logEntryBytesMax else {
            // Thrown before anything of the write is kept: `commit` rolls its batch changes back.
            throw EddyError(
                .limitExceeded,
                "this write would log \(encoded.count) bytes at \(operation.location.abbreviated) (what it writes and the before-image of what it replaces), more than logEntryBytesMax (\(self.options.logEntryBytesMax)), the most a follower can receive; write or remove it in smaller parts")
        }
        self.newestTerm.store(self.groupTerm, ordering: .relaxed)
        self.batch.put(self.log, Array(id.rawValue.utf8), encoded)
        if listening { self.events.endWrite(logID: id, silenced: write.silenced, canRead: self.canReadInGroup) }
        self.lastAssignedLogID = id
        return (.committed(CommittedWrite(logID: id, pushedKey: pushedKey, value: written.withoutPriorities, exportValue: written)), entry)
    }
}

extension LogEntry.Change {
    /// An update's changes in the order they are applied: values first, then removals, then
    /// `<node>/.priority` changes, each group as given. A node an update leaves with children
    /// so never goes empty on the way (which would drop its priority), and a priority set
    /// beside new children lands on the node they make; the result no longer depends on the
    /// order of a PATCH body's members. Clients applying an update's patch follow the same
    /// order (`ValueChange.applyExport`).
    static func inMergeOrder(_ changes: [LogEntry.Change]) -> [LogEntry.Change] {
        var values: [LogEntry.Change] = []
        var removals: [LogEntry.Change] = []
        var priorities: [LogEntry.Change] = []
        for change in changes {
            if change.path.lastKey == Value.priorityKey {
                priorities.append(change)
            } else if change.value.isNull {
                removals.append(change)
            } else {
                values.append(change)
            }
        }
        return values + removals + priorities
    }
}

extension Duration {
    var seconds: Double {
        let (s, attoseconds) = self.components
        return Double(s) + Double(attoseconds) / 1e18
    }
}
