// One Eddy database: a RocksDB directory with the tree, index, log and meta column families,
// one committer thread that owns every mutation, and a small thread pool for reads (RocksDB
// calls may block, so they never run on an event loop or the cooperative pool).
//
// Lifecycle: `Engine.open` starts the committer; `close()` stops accepting writes, commits
// everything already queued, stops the threads and closes RocksDB. Readers and writers may
// call from any task or thread.

// Live events and log entries are part of the engine's public API (ChildEvent, ListenerID,
// LogEntry, ...), so importing EddyEngine brings them.
@_exported import EddyEvents
@_exported import EddyLog
import EddyIndexes
import EddyModel
import EddyStorage
import EddyTree
import Foundation
import Logging
import NIOPosix
import Synchronization

public final class Engine: Sendable {
    public let directory: String
    public let options: EngineOptions
    /// Figures for operators (`EngineMetrics`).
    let metrics: EngineMetrics
    let database: Database
    let queue: CommitQueue
    let committer: Committer
    private let committerDone = DispatchSemaphore(value: 0)
    /// Signalled when the first `close()` finished; later callers wait on it and pass it on.
    private let closeDone = DispatchSemaphore(value: 0)
    let readers: NIOThreadPool
    /// The open streamed reads; released before the database closes.
    let streams = TreeStreamRegistry()
    private let closed = Mutex(false)
    private let readsInFlight = Mutex(0)
    /// The index catalog as last published by the committer.
    let indexCatalog: IndexCatalog
    /// The compiled security rules in force (the committer publishes each change).
    let securityRulesHolder: SecurityRulesHolder
    let logger: Logger
    private let commitObservers = CommitObservers()
    /// The database id stored in `meta` (random, fixed at creation).
    public let databaseID: String
    /// Opened read-only because the data volume was below the reserve at start.
    public let openedReadOnly: Bool
    /// Unique among the engines this process opened (a namespace closed and opened again gets
    /// a new one, where an `ObjectIdentifier` may be reused): for maps keyed by engine.
    public let instanceNumber: UInt64
    private static let instancesOpened = Atomic<UInt64>(0)

    /// Opens (creating if needed) the database in `directory`.
    /// Throws `inUse` when another process holds it, `corruption` on an unknown format.
    public static func open(
        directory: String, options: EngineOptions = EngineOptions(), clock: any MillisecondClock = SystemMillisecondClock(),
        logger: Logger = Logger(label: "eddy.engine", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws(EddyError) -> Engine {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw EddyError(.io, "cannot create data directory \(directory): \(error.localizedDescription)")
        }
        let database: Database
        // On a volume below the reserve, an existing database opens read-only: RocksDB's own
        // recovery writes (flushing the replayed log) would fail for lack of space, and
        // Debian's librocksdb aborts on such failures (see DiskSpaceReserve).
        let available = DiskSpaceReserve.availableBytes(at: directory)
        let readOnly =
            options.diskReserveBytes > 0 && (available.map { $0 < options.diskReserveBytes } ?? false)
            && FileManager.default.fileExists(atPath: directory + "/CURRENT")
        do {
            var storage = StorageOptions.engineLayout()
            storage.readOnly = readOnly
            storage.blockCache = options.blockCache
            database = try Database(path: directory, columnFamilies: ColumnFamilies.all, options: storage)
        } catch {
            if error.isLockHeld {
                throw EddyError(
                    .inUse,
                    "data directory \(directory) is in use by another process (is eddyd running?); stop it first",
                    underlying: error)
            }
            throw EngineErrors.storage(error, while: "opening \(directory)")
        }
        let engine = try Engine(
            directory: directory, database: database, options: options, openedReadOnly: readOnly, clock: clock, logger: logger)
        if readOnly {
            logger.warning(
                "opened read-only: the data volume is full",
                metadata: ["eddy.directory": "\(directory)", "eddy.available_bytes": "\(available ?? 0)", "eddy.reserve_bytes": "\(options.diskReserveBytes)"])
            engine.committer.fail(
                EddyError(
                    .insufficientStorage,
                    "eddyd started read-only: the data volume had \(available ?? 0) bytes free, below the reserve of \(options.diskReserveBytes) (--disk-reserve-bytes); writes are refused until space is freed and eddyd restarted; reads and event streams work"
                ))
        }
        return engine
    }

    private init(
        directory: String, database: Database, options: EngineOptions, openedReadOnly: Bool, clock: any MillisecondClock,
        logger: Logger
    ) throws(EddyError) {
        self.directory = directory
        self.openedReadOnly = openedReadOnly
        self.instanceNumber = Self.instancesOpened.add(1, ordering: .relaxed).newValue
        self.options = options
        self.metrics = EngineMetrics(namespace: options.namespace)
        self.database = database
        self.logger = logger
        self.databaseID = try Self.checkFormat(database, clock: clock)
        let lastLogID = try Self.lastLogID(database)
        let lastTerm = Self.lastLogTerm(database, lastLogID)
        let (definitions, nextIndexID) = try IndexCatalog.load(database)
        self.indexCatalog = IndexCatalog(definitions)
        self.securityRulesHolder = SecurityRulesHolder(SecurityRulesHolder.compile(try Self.storedRules(database) ?? options.defaultRules, logger: logger))
        let metrics = self.metrics
        self.queue = CommitQueue(capacity: options.commitQueueCountMax) { count in metrics.recordListenOrdersExpired(count) }
        let observers = self.commitObservers
        self.committer = Committer(
            database: database, lastLogID: lastLogID, lastTerm: lastTerm, clock: clock, queue: self.queue, options: options,
            spaceReserve: DiskSpaceReserve(path: directory, reserveBytes: options.diskReserveBytes),
            catalog: self.indexCatalog, security: self.securityRulesHolder, nextIndexID: nextIndexID, logger: logger,
            onCommit: { entries in observers.notify(entries) })
        self.readers = NIOThreadPool(numberOfThreads: max(1, options.readerThreads))
        self.readers.start()
        let committer = self.committer
        let done = self.committerDone
        let thread = Thread {
            ThreadName.set("eddy-committer")
            committer.run()
            done.signal()
        }
        thread.name = "eddy-committer"
        thread.start()
        logger.info(
            "opened database",
            metadata: [
                "eddy.directory": "\(directory)", "eddy.durability": "\(options.durability.rawValue)",
                "eddy.last_log_id": "\(lastLogID?.rawValue ?? "none")",
            ])
    }

    deinit {
        self.close()
    }

    /// Stops accepting writes, commits every queued write, and closes the database.
    /// Idempotent; blocks until the committer has drained.
    public func close() {
        let wasClosed = self.closed.withLock { closed in
            defer { closed = true }
            return closed
        }
        guard !wasClosed else {
            // Another caller is closing: return only once it is done, as documented.
            self.closeDone.wait()
            self.closeDone.signal()
            return
        }
        defer { self.closeDone.signal() }
        self.queue.stop()
        self.committerDone.wait()
        // Not `syncShutdownGracefully`: its completion runs on Dispatch's global queue, whose
        // few threads (as many as cores; Swift's tasks run there too) may all be blocked on
        // the lock a caller holds while closing (the data directory's, closing a namespace
        // for room), which stalled a close for seconds until Dispatch added a thread. The
        // completion runs on a queue of its own instead.
        let readersStopped = DispatchSemaphore(value: 0)
        self.readers.shutdownGracefully(queue: DispatchQueue(label: "eddy.engine.close")) { _ in readersStopped.signal() }
        readersStopped.wait()
        self.streams.closeAll()
        if self.options.durability == .none, self.committer.failed == nil {
            do {
                try self.database.flushMemtables()
            } catch {
                self.logger.error("flushing memtables at close failed", metadata: ["eddy.error": "\(error)"])
            }
        }
        self.database.close()
        self.logger.info("closed database", metadata: ["eddy.directory": "\(self.directory)"])
    }

    /// Nil while healthy; the error that made the engine stop accepting writes otherwise.
    public var failure: EddyError? { self.committer.failed }

    /// Calls `observer` with the entries of each durable group, in log order, on the committer
    /// or the syncer thread (never both at once). Observers must not block and must not close
    /// the engine (close waits for those threads).
    public func observeCommits(_ observer: @escaping @Sendable ([LogEntry]) -> Void) {
        self.commitObservers.add(observer)
    }

    // MARK: Writes

    /// Validates and commits a write. `ifMatch` makes it conditional on the current ETag of the
    /// location (set and remove). Throws validation errors before anything is queued.
    /// `silencing`: listeners that must not hear this write (their results still follow it),
    /// e.g. the connection that made it.
    /// `access`: whom the write acts for; the committer checks the security rules unless it is
    /// the admin (a denial is `permissionDenied`, and nothing is applied).
    public func write(
        _ operation: WriteOperation, ifMatch: String? = nil, silencing: Set<ListenerID> = [], access: Access = .admin
    ) async throws(EddyError) -> WriteOutcome {
        try self.checkLeader()
        var approximateBytes = 0
        let validated = try self.validateCounted(operation, approximateBytes: &approximateBytes)
        await self.waitForCommitRoom()
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<WriteOutcome, EddyError>, Never>) in
            self.enqueue(validated, ifMatch: ifMatch, approximateBytes: approximateBytes, silencing: silencing, access: access) {
                continuation.resume(returning: $0)
            }
        }
        return try result.get()
    }

    /// True while the commit queue has room for another write (a hint: others may take it
    /// first); a caller that cannot wait uses it where `waitForCommitRoom` would suspend.
    public var hasCommitRoom: Bool { !self.queue.isFull }

    /// Waits, without holding a thread, while the commit queue holds `commitQueueCountMax`
    /// writes. A caller that holds its client back meanwhile (a connection that stops reading)
    /// turns a full queue into backpressure instead of `busy` refusals. Returns at once when
    /// there is room; polls every 1 to 8 ms while full (the committer drains a group in about
    /// that time).
    public func waitForCommitRoom() async {
        var milliseconds = 1
        while self.queue.isFull {
            try? await Task.sleep(for: .milliseconds(milliseconds))
            milliseconds = min(milliseconds * 2, 8)
        }
    }

    /// Validates a write and queues it before returning, so writes submitted one after the
    /// other commit in that order; `completion` runs once it is durable (after its events were
    /// handed to listeners) or failed, on an engine thread: it must not block. Validation
    /// errors are thrown before anything is queued; a full or stopping queue reaches
    /// `completion` as a failure. Lets a caller pipeline writes without awaiting each one.
    public func submit(
        _ operation: WriteOperation, ifMatch: String? = nil, silencing: Set<ListenerID> = [], access: Access = .admin,
        completion: @escaping @Sendable (Result<WriteOutcome, EddyError>) -> Void
    ) throws(EddyError) {
        try self.checkLeader()
        var approximateBytes = 0
        let validated = try self.validateCounted(operation, approximateBytes: &approximateBytes)
        self.enqueue(
            validated, ifMatch: ifMatch, approximateBytes: approximateBytes, silencing: silencing, access: access, completion: completion)
    }

    /// `validate`, counting a refusal in `eddy_writes_total`.
    private func validateCounted(_ operation: WriteOperation, approximateBytes: inout Int) throws(EddyError) -> WriteOperation {
        do {
            return try Self.validate(operation, approximateBytes: &approximateBytes)
        } catch {
            self.metrics.recordRefusal(error)
            throw error
        }
    }

    /// Refuses writes on a follower, naming its leader.
    func checkLeader() throws(EddyError) {
        if let leader = self.options.leader {
            throw EddyError(.notLeader, "this eddyd is a read-only follower of the leader at \(leader); send writes and rules changes there")
        }
        if let fence = self.options.writeFence, case .failure(let refusal) = fence() { throw refusal }
    }

    /// The leadership term of the newest entry applied (0 outside a cluster; see `LogEntry.term`).
    public var newestTerm: UInt64 { self.committer.newestTerm.load(ordering: .relaxed) }

    /// The term this engine writes in now: a cluster leader's proven term, otherwise the newest
    /// entry's.
    public func currentTerm() -> UInt64 {
        guard let fence = self.options.writeFence, case .success(let term) = fence() else { return self.newestTerm }
        return max(term, self.newestTerm)
    }

    /// On a follower: applies the leader's entries in order (each with the leader's id and
    /// timestamp, in this replica's log too) and returns once all are durable here. Stops at the
    /// first that fails (e.g. it is not after the last applied one, or the replica diverged);
    /// the ones before it stay applied.
    public func applyReplicated(_ entries: [LogEntry]) async throws(EddyError) {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, EddyError>, Never>) in
            self.submitReplicated(entries) { continuation.resume(returning: $0) }
        }
        try result.get()
    }

    /// `applyReplicated` without waiting: queues the entries before returning (batches submitted
    /// one after the other apply in that order) and calls `completion` once all are durable, or
    /// with the first failure, on an engine thread (it must not block).
    /// `stored`: the leader's stored encoding of each entry (kept as it is in this replica's log);
    /// nil to encode the entries here.
    public func submitReplicated(
        _ entries: [LogEntry], stored: [[UInt8]]? = nil, completion: @escaping @Sendable (Result<Void, EddyError>) -> Void
    ) {
        if entries.isEmpty { return completion(.success(())) }
        precondition(stored == nil || stored!.count == entries.count, "one stored encoding per entry")
        let outcomes = Mutex<(count: Int, failure: EddyError?)>((0, nil))
        for (i, entry) in entries.enumerated() {
            var bytes = 64
            if let encoded = stored?[i] {
                bytes += encoded.count
            } else {
                for change in entry.changes { bytes += change.value.approximateBytes }
            }
            let pending = PendingWrite(
                operation: .update(entry.location, entry.changes), ifMatch: nil, approximateBytes: bytes, replicated: entry,
                replicatedBytes: stored?[i],
                completion: { result in
                    let done = outcomes.withLock { state -> Result<Void, EddyError>? in
                        if case .failure(let error) = result, state.failure == nil { state.failure = error }
                        state.count += 1
                        guard state.count == entries.count else { return nil }
                        return state.failure.map { .failure($0) } ?? .success(())
                    }
                    if let done { completion(done) }
                })
            if let refused = self.queue.enqueue(pending) { pending.completion(.failure(refused)) }
        }
    }

    /// The database this one is a copy of, for replication: the original leader's id on a replica
    /// (which keeps it when it is promoted, so its followers and the others of its cluster go on
    /// replicating "the same database"), its own id otherwise.
    public func replicatedDatabaseID() throws(EddyError) -> String {
        try self.replicaOf() ?? self.databaseID
    }

    /// On a follower's replica: the id of the leader's database it replicates (nil before its
    /// first connection).
    public func replicaOf() throws(EddyError) -> String? {
        do {
            return try self.database.get(self.database.columnFamily(ColumnFamilies.meta), MetaKeys.replicaOf).map { String(decoding: $0, as: UTF8.self) }
        } catch {
            throw EngineErrors.storage(error, while: "reading which database this replica follows")
        }
    }

    /// Records (synced) the leader's database id this replica follows.
    public func setReplicaOf(_ databaseID: String) throws(EddyError) {
        do {
            try self.database.put(self.database.columnFamily(ColumnFamilies.meta), MetaKeys.replicaOf, Array(databaseID.utf8), durability: .sync)
        } catch {
            throw EngineErrors.storage(error, while: "recording which database this replica follows")
        }
    }

    private func enqueue(
        _ validated: WriteOperation, ifMatch: String?, approximateBytes: Int, silencing: Set<ListenerID>, access: Access,
        completion: @escaping @Sendable (Result<WriteOutcome, EddyError>) -> Void
    ) {
        let metrics = self.metrics
        let completion: @Sendable (Result<WriteOutcome, EddyError>) -> Void = { result in
            metrics.recordWrite(result, bytes: approximateBytes)
            completion(result)
        }
        var pending = PendingWrite(
            operation: validated, ifMatch: ifMatch, access: access, approximateBytes: approximateBytes, silenced: silencing,
            completion: completion)
        if !access.isAdmin {
            switch self.precheck(validated, access) {
            case .denied:
                completion(.failure(Self.permissionDenied))
                return
            case .allowed(let version): pending.checkedUnderRules = version
            case .needsTree: break
            }
        }
        if let refused = self.queue.enqueue(pending) { completion(.failure(refused)) }
    }

    public func set(_ path: Path, _ value: Value, ifMatch: String? = nil) async throws(EddyError) -> WriteOutcome {
        try await self.write(.set(path, value), ifMatch: ifMatch)
    }

    public func push(_ path: Path, _ value: Value) async throws(EddyError) -> CommittedWrite {
        try await self.write(.push(path, value)).committed!
    }

    public func update(_ path: Path, _ changes: [LogEntry.Change]) async throws(EddyError) -> CommittedWrite {
        try await self.write(.update(path, changes)).committed!
    }

    public func remove(_ path: Path, ifMatch: String? = nil) async throws(EddyError) -> WriteOutcome {
        try await self.write(.remove(path), ifMatch: ifMatch)
    }

    /// The write validated and normalized as `write` would (keys, sizes, server values),
    /// without queueing it; adds its rough size to `approximateBytes`. For writes held to be
    /// made later (onDisconnect).
    public static func validated(_ operation: WriteOperation, approximateBytes: inout Int) throws(EddyError) -> WriteOperation {
        try self.validate(operation, approximateBytes: &approximateBytes)
    }

    /// Validates and normalizes a write; adds its rough size to `approximateBytes`.
    static func validate(_ operation: WriteOperation, approximateBytes: inout Int) throws(EddyError) -> WriteOperation {
        switch operation {
        case .set(let path, let value):
            return .set(path, try WriteValidator.validate(value, at: path, approximateBytes: &approximateBytes))
        case .remove(let path):
            try WriteValidator.validateLocation(path)
            return .remove(path)
        case .push(let path, let value):
            // The child key is a 20-character push ID; an error names it "<push id>".
            let placeholder = "--------------------"
            do {
                return .push(path, try WriteValidator.validate(value, at: path.appending(placeholder), approximateBytes: &approximateBytes))
            } catch {
                throw EddyError(error.code, error.message.replacing(placeholder, with: "<push id>"))
            }
        case .update(let path, let changes):
            if changes.count > Limits.updatePathsCountMax {
                throw EddyError(
                    .limitExceeded,
                    "update at \(path.abbreviated) has \(changes.count) paths; updatePathsCountMax is \(Limits.updatePathsCountMax)")
            }
            var validated: [LogEntry.Change] = []
            validated.reserveCapacity(changes.count)
            for change in changes {
                let absolute = path.appending(change.path)
                validated.append(
                    .init(
                        path: change.path,
                        value: try WriteValidator.validate(change.value, at: absolute, approximateBytes: &approximateBytes)))
            }
            let sorted = validated.map(\.path).sorted { $0.keys.lexicographicallyPrecedes($1.keys) }
            for (a, b) in zip(sorted, sorted.dropFirst()) where a.isAncestorOrSelf(of: b) {
                let what = a == b ? "twice" : "together with its descendant \(path.appending(b).abbreviated)"
                throw EddyError(
                    .invalidPath,
                    "update at \(path.abbreviated) contains path \(path.appending(a).abbreviated) \(what); a path and its ancestor cannot be updated together"
                )
            }
            return .update(path, validated)
        }
    }

    // MARK: Reads (blocking variants run on the caller's thread)

    /// The value at `path` (whole subtree).
    public func get(_ path: Path) async throws(EddyError) -> Value {
        try await self.onReader { () throws(EddyError) in try self.readValue(path) }
    }

    /// Firebase `shallow=true`.
    public func getShallow(_ path: Path) async throws(EddyError) -> Value {
        try await self.onReader { () throws(EddyError) in try self.readShallow(path) }
    }

    /// Blocking read of the value at `path`.
    public func readValue(_ path: Path) throws(EddyError) -> Value {
        let iterator = self.database.makeCurrentIterator(self.database.columnFamily(ColumnFamilies.tree))
        return try TreeReader.readSubtree(iterator, prefix: PathKeyEncoding.encode(path)).value
    }

    public func readShallow(_ path: Path) throws(EddyError) -> Value {
        let iterator = self.database.makeCurrentIterator(self.database.columnFamily(ColumnFamilies.tree))
        return try TreeReader.readShallow(iterator, prefix: PathKeyEncoding.encode(path))
    }

    /// Runs a blocking read on the reader pool. At most `Limits.readQueueCountMax` reads wait
    /// or run at once; beyond that a read is refused with `busy` (the pool's own queue is
    /// unbounded, so this counter is its bound).
    func onReader<T: Sendable>(_ body: @escaping @Sendable () throws(EddyError) -> T) async throws(EddyError) -> T {
        let admitted = self.readsInFlight.withLock { count in
            guard count < Limits.readQueueCountMax else { return false }
            count += 1
            return true
        }
        guard admitted else {
            throw EddyError(
                .busy, "too many reads in flight (readQueueCountMax is \(Limits.readQueueCountMax)); nothing was read, retry")
        }
        defer { self.readsInFlight.withLock { $0 -= 1 } }
        let result: Result<T, EddyError>
        do {
            result = try await self.readers.runIfActive { () -> Result<T, EddyError> in
                do throws(EddyError) { return .success(try body()) } catch { return .failure(error) }
            }
        } catch {
            throw EddyError(.shuttingDown, "the database is shutting down")
        }
        return try result.get()
    }

    // MARK: Open-time checks

    private static func checkFormat(_ database: Database, clock: any MillisecondClock) throws(EddyError) -> String {
        let meta = database.columnFamily(ColumnFamilies.meta)
        do {
            if let version = try database.get(meta, MetaKeys.formatVersion) {
                guard version.count == 1, StorageFormat.readable.contains(version[0]) else {
                    throw EddyError(
                        .corruption,
                        "\(database.path) has storage format \(version.first.map(String.init) ?? "?"); this eddyd reads formats \(StorageFormat.readable.lowerBound) to \(StorageFormat.version)"
                    )
                }
                guard let id = try database.get(meta, MetaKeys.databaseID) else {
                    throw EddyError(.corruption, "\(database.path) has no database id in meta")
                }
                if version[0] < StorageFormat.version {
                    // Upgrade in place: every older layout is a subset of this one.
                    try database.put(meta, MetaKeys.formatVersion, [StorageFormat.version], durability: .sync)
                }
                return String(decoding: id, as: UTF8.self)
            }
            var generator = PushIDGenerator()
            let id = generator.next(nowMilliseconds: clock.nowMilliseconds()).rawValue
            try database.put(meta, MetaKeys.databaseID, Array(id.utf8), durability: .sync)
            try database.put(meta, MetaKeys.formatVersion, [StorageFormat.version], durability: .sync)
            return id
        } catch let error as EddyError {
            throw error
        } catch let error as RocksDBError {
            throw EngineErrors.storage(error, while: "reading the format version")
        } catch {
            throw EddyError(.internal, "\(error)")
        }
    }

    static func lastLogID(_ database: Database) throws(EddyError) -> LogID? {
        let iterator = database.makeIterator(database.columnFamily(ColumnFamilies.log))
        iterator.seekToLast()
        guard iterator.isValid else {
            do {
                try iterator.checkError()
            } catch {
                throw EngineErrors.storage(error, while: "reading the last log id")
            }
            return nil
        }
        let key = String(decoding: iterator.key, as: UTF8.self)
        guard let id = LogID(key) else { throw EddyError(.corruption, "log key \(key.debugDescription) is not a push ID") }
        return id
    }

    /// The term of the newest log entry (0 with none). An entry that does not decode reads as
    /// 0 here: opening must still work so `eddy verify` can report it.
    static func lastLogTerm(_ database: Database, _ id: LogID?) -> UInt64 {
        guard let id, let bytes = try? database.get(database.columnFamily(ColumnFamilies.log), Array(id.rawValue.utf8)),
            let entry = try? LogEntryCodec.decode(id: id, bytes)
        else { return 0 }
        return entry.term
    }
}

/// Callbacks told about each durable commit group.
final class CommitObservers: Sendable {
    private let observers = Mutex<[@Sendable ([LogEntry]) -> Void]>([])

    func add(_ observer: @escaping @Sendable ([LogEntry]) -> Void) {
        self.observers.withLock { $0.append(observer) }
    }

    func notify(_ entries: [LogEntry]) {
        for observer in self.observers.withLock({ $0 }) { observer(entries) }
    }
}
