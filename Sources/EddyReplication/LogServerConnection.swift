// One follower's connection to the leader's log server. After the follower's `hello` it sends
// `welcome`, then every durable entry after the follower's last applied id, in `entries` frames
// of at most `entriesPerFrameMax` entries / about `frameBytesMax` bytes, then the live tail; the
// rules document whenever it changes; a `heartbeat` when idle for `heartbeatInterval`. On the
// default namespace's connection, the welcome and a heartbeat whenever the list changes carry
// `namespaces`, every namespace the leader has (the follower replicates each on its own
// connection); a hello for a namespace the leader does not have is refused. Each
// frame is written before the next is read from the log (the socket is the only buffer: a slow
// follower slows only its own connection). The follower's `applied` frames update the registry.
//
// Snapshots: a follower that needs entries the log no longer has (new, after the log was
// pruned, or older than the log keeps) gets a consistent snapshot (`snapshot`, chunks,
// `snapshotEnd`) and then the entries after it, when its hello says it can take one; it is
// refused with reason `snapshotNeeded` otherwise. A new follower of a long log (at least
// `snapshotBootstrapEntries` entries) that can take a snapshot gets one too: its catch-up. So
// does a replica checked at its start that is at least that many entries behind, when replaying
// them would take longer than copying the state.
//
// Refusals (`refused`, then close): a protocol version it does not speak, a follower of another
// database, a follower whose last applied entry this leader never had (another history; the
// refusal names `commonPoint`, the newest id of the hello's `recent` sample this log has), a
// hello without the replication secret when one is configured (nothing else is sent), and an
// `applied` id beyond what was sent to this follower (a forged acknowledgement must never
// release a `--sync-followers` write).
//
// Parked namespaces (protocol 4): on the default namespace's connection, a `watch` frame names
// namespaces the follower parked and the newest entry it applied in each (`NamespaceWatches`).
// Their positions are held for log retention while watched, and the heartbeat after a watch
// fires names the namespace in `written`.

import EddyEngine
import EddyModel
import EddyProtocol
import Foundation
import Logging
import NIOCore
import Synchronization

final class LogServerConnection: Sendable {
    static let entriesPerFrameMax = 1024
    static let frameBytesMax = 1 << 20
    /// A follower that keeps up is sent each commit group as it becomes durable: a few entries,
    /// fresh in the memtable. The first read after a wake-up takes at most this many entries /
    /// bytes and runs on the connection's task (microseconds), not on the reader threads: a
    /// thread hop there and back on the path of every `--sync-followers` write. A read that
    /// comes back full means the follower is catching up; the reads after it go to the reader
    /// threads, in frames of `entriesPerFrameMax` / `frameBytesMax`.
    static let tailEntriesMax = 128
    static let tailBytesMax = 64 << 10
    static let heartbeatInterval: Duration = .seconds(1)
    /// A connection that has not sent its `hello` this long after it opened is closed: an idle
    /// connection must not hold a slot of `--replication-connections-max`.
    static let helloTimeout: TimeAmount = .seconds(10)
    /// How long a follower's position stays needed after its bootstrap check ended, for its
    /// replication session to connect (a daemon opening its databases and starting).
    static let bootstrapHold: Duration = .seconds(60)

    let channel: any Channel
    let data: DataDirectory
    let registry: FollowerRegistry
    let doorbells: CommitDoorbells
    let watches: NamespaceWatches
    let logger: Logger
    /// The replication secret a follower's hello must carry (nil: none required).
    let secret: String?
    private let registration = Mutex<(follower: UInt64, bell: UInt64, name: String, namespace: String)?>(nil)
    /// Where `watch` frames are handled, one at a time (see `received`).
    static let watchQueue = DispatchQueue(label: "eddy.log-server.watch")
    /// Namespaces a watch frame may name that this leader does not hold.
    static let unknownWatchesMax = 64
    /// A bootstrap check (its hello takes a snapshot): when it ends, the follower's position is
    /// held for `bootstrapHold`, until its replication session connects (see FollowerRegistry).
    private let holdsPositionAtEnd = Mutex(false)
    private let started = Mutex(false)
    private let doorbell: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation)

    /// A new replica (no entry applied) of a log holding at least this many entries starts from
    /// a snapshot instead of replaying them (0: never, unless the log was pruned). A snapshot is
    /// written into SST files and ingested, several times faster than entries applied through
    /// the follower's committer (Benchmarks/README.md, "catch-up"), and the log comes with it,
    /// so the replica is the same either way. Below it, replay: no snapshot held open on the
    /// leader for a short history. A replica checked at its start (its hello takes a snapshot)
    /// that is at least this many entries behind is copied too, when the entries it lacks are
    /// many next to what a snapshot copies (`Engine.replicaCatchesUpSoonerFromSnapshot`).
    let snapshotBootstrapEntries: Int

    init(
        channel: any Channel, data: DataDirectory, registry: FollowerRegistry, doorbells: CommitDoorbells, watches: NamespaceWatches,
        secret: String? = nil, snapshotBootstrapEntries: Int = LogServerService.snapshotBootstrapEntriesDefault, logger: Logger
    ) {
        self.watches = watches
        self.snapshotBootstrapEntries = snapshotBootstrapEntries
        self.secret = secret
        self.channel = channel
        self.data = data
        self.registry = registry
        self.doorbells = doorbells
        self.logger = logger
        self.doorbell = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// The connection is active (on the event loop). `admitted`: it got a slot of `cap`; if not,
    /// it is refused at once (reason `busy`). Otherwise it has `helloTimeout` to say `hello`.
    func opened(admitted: Bool, cap: ReplicationConnectionCap) {
        guard admitted else {
            return self.refuse(
                "this leader has \(cap.max) replication connections open, the most it takes (--replication-connections-max \(cap.max)); try again later",
                reason: "busy")
        }
        self.channel.eventLoop.scheduleTask(in: Self.helloTimeout) {
            guard !self.started.withLock({ $0 }) else { return }
            self.logger.warning("closing a replication connection that sent no hello", metadata: ["eddy.waited": "\(Self.helloTimeout)"])
            self.channel.close(promise: nil)
        }
    }

    /// A frame from the follower (on the event loop).
    func received(_ frame: Frame) {
        switch frame.kind {
        case .hello:
            let first = self.started.withLock { started -> Bool in
                defer { started = true }
                return !started
            }
            guard first else { return self.refuse("hello was sent twice") }
            Task { await self.serve(frame.payload) }
        case .applied:
            guard let id = self.registration.withLock({ $0?.follower }),
                case .string(let text)? = try? JSONParser.parse(frame.payload)["applied"], let applied = LogID(text)
            else { return self.refuse("applied frame without a hello before it, or without an \"applied\" log id") }
            guard self.registry.applied(id, applied) else {
                return self.refuse("applied \(applied) is beyond the entries sent to this follower; it was disconnected")
            }
        case .watch:
            guard let registration = self.registration.withLock({ $0 }), registration.namespace == DataDirectory.defaultNamespace else {
                return self.refuse("watch frame without a hello before it, or on a connection of a namespace other than the default one")
            }
            guard case .object(let members)? = try? JSONParser.parse(frame.payload)["namespaces"] else {
                return self.refuse("watch frame without a \"namespaces\" object")
            }
            var watched: [(namespace: String, after: LogID?)] = []
            for (namespace, position) in members.sorted(by: { $0.key < $1.key }) {
                guard (try? DataDirectory.validateNamespace(namespace)) != nil, namespace != DataDirectory.defaultNamespace else {
                    return self.refuse("watch frame names namespace \(namespace.debugDescription), which cannot be watched")
                }
                switch position {
                case .null: watched.append((namespace, nil))
                case .string(let text) where LogID(text) != nil: watched.append((namespace, LogID(text)))
                default: return self.refuse("watch frame: namespace \(namespace)'s position must be a log id or null")
                }
            }
            // Reading a namespace's newest entry may open it (blocking): off the event loop, on a
            // queue of its own (not Dispatch's global threads, which Swift's tasks share).
            Self.watchQueue.async { [watched] in self.watch(watched, registration.follower, name: registration.name) }
        default:
            self.refuse("frame kind \(frame.kind) is not part of the replication protocol from a follower")
        }
    }

    func closed() {
        self.doorbell.continuation.finish()
        if let registration = self.registration.withLock({ $0 }) {
            self.registry.remove(registration.follower, holdFor: self.holdsPositionAtEnd.withLock { $0 } ? Self.bootstrapHold : nil)
            self.doorbells.remove(registration.bell)
            // Parked namespaces' positions stay held (refreshed while this connection lasted) for
            // `bootstrapHold`, for the follower's next connection to watch them again.
            self.watches.remove(connection: registration.follower)
        }
    }

    /// Registers the watches of a `watch` frame, then fires each whose namespace already has a
    /// newer entry (see NamespaceWatches). Blocking: a namespace whose newest entry the data
    /// directory does not know (not opened since this leader started) is opened to read it.
    private func watch(_ watched: [(namespace: String, after: LogID?)], _ connection: UInt64, name: String) {
        // Only namespaces this leader holds are watched (and their positions held): one frame
        // naming 900,000 made-up namespaces filled these tables for good and stalled every
        // heartbeat. One the leader does not hold (dropped meanwhile) fires at once instead: the
        // follower connects to it and finds out. Past `unknownWatchesMax` such names, the frame
        // is refused.
        let onDisk = Set(self.data.namespacesOnDisk())
        let unknown = watched.filter { !onDisk.contains($0.namespace) }
        guard unknown.count <= Self.unknownWatchesMax else {
            return self.refuse(
                "watch frame names \(unknown.count) namespaces this leader does not hold (at most \(Self.unknownWatchesMax) may be unknown, e.g. dropped meanwhile)")
        }
        for (namespace, after) in unknown {
            self.watches.watch(connection: connection, namespace: namespace, after: after)
            self.watches.fire(connection: connection, namespace: namespace)
        }
        for (namespace, after) in watched where onDisk.contains(namespace) {
            // Kept for log retention from now on (refreshed by the connection's tail loop).
            self.registry.hold(name: name, namespace: namespace, applied: after, for: Self.bootstrapHold)
            self.watches.watch(connection: connection, namespace: namespace, after: after)
            let newest: LogID?
            do {
                if let known = self.data.newestLogIDIfKnown(namespace: namespace) {
                    newest = known
                } else {
                    // Not opened since this leader started: opened to read it.
                    let lease = try self.data.lease(namespace: namespace, create: false)
                    defer { lease.release() }
                    newest = try lease.engine.lastLogID()
                }
            } catch {
                // Cannot tell (busy, gone): the follower connects and finds out.
                self.watches.fire(connection: connection, namespace: namespace)
                continue
            }
            if let newest, after.map({ $0 < newest }) ?? true {
                self.watches.fire(connection: connection, namespace: namespace)
            }
        }
    }

    /// Sends `refused` (with a machine-readable `reason` when the follower can act on it) and
    /// closes the connection.
    private func refuse(_ message: String, reason: String? = nil, extra: [String: Value] = [:]) {
        self.logger.warning("refusing a follower", metadata: ["eddy.reason": "\(message)"])
        var body: [String: Value] = extra
        body["message"] = .string(message)
        if let reason { body["reason"] = .string(reason) }
        let buffer = ByteBuffer.frame(Frame(kind: .refused, requestID: 0, payload: JSONWriter.bytes(.object(body))), allocator: self.channel.allocator)
        self.channel.writeAndFlush(buffer).whenComplete { _ in self.channel.close(promise: nil) }
    }

    private func send(_ kind: Frame.Kind, _ payload: [UInt8]) async throws {
        try await self.channel.writeAndFlush(ByteBuffer.frame(Frame(kind: kind, requestID: 0, payload: payload), allocator: self.channel.allocator)).get()
    }

    /// Streams a consistent copy of the database and returns the log id it is the state after.
    private func sendSnapshot(_ engine: Engine, follower name: String, registered id: UInt64) async throws -> LogID? {
        let reader = try engine.makeSnapshotReader()
        self.logger.info("sending a snapshot to a follower", metadata: ["eddy.follower": "\(name)", "eddy.at": "\(reader.at?.rawValue ?? "none")"])
        try await self.send(
            .snapshot, JSONWriter.bytes(.object(["at": reader.at.map { .string($0.rawValue) } ?? .null, "databaseID": .string(try engine.replicatedDatabaseID())])))
        var count = 0
        while let chunk = try SnapshotChunk.encode(from: reader, bytesMax: Self.frameBytesMax) {
            try await self.send(.snapshotChunk, chunk.payload)
            count += chunk.records
        }
        // The snapshot may hold the newest entries before their fsync: promise them only once
        // they are durable.
        if let at = reader.at {
            while try engine.lastLogID().map({ $0 < at }) ?? true { try await Task.sleep(for: .milliseconds(1)) }
            self.registry.sent(id, upTo: at, count: 0)  // before the end frame the follower acknowledges
        }
        try await self.send(.snapshotEnd, JSONWriter.bytes(.object(["records": .number(Double(count))])))
        self.logger.info("snapshot sent", metadata: ["eddy.follower": "\(name)", "eddy.records": "\(count)"])
        return reader.at
    }

    private func serve(_ payload: [UInt8]) async {
        let hello: Value
        do {
            hello = try JSONParser.parse(payload)
        } catch {
            return self.refuse("hello is not JSON: \(error.message)")
        }
        if let secret = self.secret {
            guard case .string(let offered) = hello["secret"], ConstantTime.equal(offered, secret) else {
                self.logger.warning("replication peer refused: wrong or missing replication secret")
                return self.refuse("authentication failed: this leader requires its replication secret (--replication-secret-file)", reason: "unauthenticated")
            }
        }
        guard hello["protocol"] == .number(Double(Frame.replicationProtocolVersion)) else {
            return self.refuse(
                "replication protocol \(JSONWriter.string(hello["protocol"])) is not supported; this leader speaks \(Frame.replicationProtocolVersion) (run the same eddyd version on the leader and its followers)"
            )
        }
        guard case .string(let name) = hello["follower"], !name.isEmpty else { return self.refuse("hello needs a \"follower\" name") }
        var namespace = DataDirectory.defaultNamespace
        if case .string(let ns) = hello["ns"] { namespace = ns }
        let lease: EngineLease
        do {
            // A follower replicates the leader's namespaces; it never creates one here.
            lease = try self.data.lease(namespace: namespace, create: false)
        } catch {
            return self.refuse(error.message)
        }
        // The namespace stays open while a follower tails it.
        defer { lease.release() }
        let engine = lease.engine
        // A promoted follower serves the database it replicated (its original leader's id).
        let databaseID: String
        do {
            databaseID = try engine.replicatedDatabaseID()
        } catch {
            return self.refuse(error.message)
        }
        if case .string(let id) = hello["databaseID"], id != databaseID {
            return self.refuse("follower \(name) replicates database \(id), but this leader's \(namespace) database is \(databaseID)")
        }
        var position: LogID? = nil
        var needsSnapshot = false
        let acceptsSnapshot = hello["snapshot"] == .bool(true)
        self.holdsPositionAtEnd.withLock { $0 = acceptsSnapshot }
        let pruned: LogID?
        do {
            pruned = try engine.logPrunedThrough()
            if case .string(let text) = hello["lastApplied"] {
                guard let id = LogID(text) else { return self.refuse("lastApplied \(text) is not a log id") }
                if try engine.canResume(after: id) {
                    position = id
                    // A replica far behind, at its start: copying the state beats replaying the
                    // entries it lacks when they are many (see `snapshotBootstrapEntries`).
                    needsSnapshot =
                        acceptsSnapshot
                        && engine.replicaCatchesUpSoonerFromSnapshot(after: id, entriesMin: self.snapshotBootstrapEntries)
                } else if let pruned, id < pruned {
                    needsSnapshot = true
                } else {
                    // The newest of the follower's sampled ids this log has (its `recent`, newest
                    // first): where the histories part, so it can discard only what follows.
                    var extra: [String: Value] = [:]
                    if case .string(let recent) = hello["recent"] {
                        for text in recent.split(separator: ",").prefix(1024) {
                            if let sampled = LogID(String(text)), try engine.canResume(after: sampled) {
                                extra["commonPoint"] = .string(sampled.rawValue)
                                break
                            }
                        }
                    }
                    return self.refuse(
                        "follower \(name) last applied entry \(id), which is not in this leader's log (another history); give the follower an empty data directory",
                        reason: "anotherHistory", extra: extra)
                }
            } else if hello["lastApplied"] != .null {
                return self.refuse("lastApplied must be a log id or null")
            } else {
                // A new replica: from a snapshot when the log no longer starts at the beginning,
                // or when it is long enough that copying the state beats replaying the history
                // (a snapshot is written as plain records; a replayed entry goes through the
                // committer, before-images and all). See `snapshotBootstrapEntries`.
                needsSnapshot =
                    pruned != nil
                    || (acceptsSnapshot && self.snapshotBootstrapEntries > 0 && engine.logHolds(atLeast: self.snapshotBootstrapEntries))
            }
        } catch {
            return self.refuse(error.message)
        }
        if needsSnapshot, !acceptsSnapshot {
            return self.refuse(
                "follower \(name) needs entries the log no longer has (pruned through \(pruned?.rawValue ?? "?")); restart it: it bootstraps from a snapshot",
                reason: "snapshotNeeded")
        }
        let id = self.registry.add(name: name, namespace: namespace, applied: position)
        let bell = self.doorbells.add(engine: engine, bell: self.doorbell.continuation)
        if namespace == DataDirectory.defaultNamespace { self.watches.add(connection: id, bell: self.doorbell.continuation) }
        self.registration.withLock { $0 = (id, bell, name, namespace) }
        self.logger.info(
            "follower connected", metadata: ["eddy.follower": "\(name)", "eddy.ns": "\(namespace)", "eddy.last_applied": "\(position?.rawValue ?? "none")"])
        let heartbeat = Task { [continuation = self.doorbell.continuation] in
            while !Task.isCancelled {
                try? await Task.sleep(for: Self.heartbeatInterval)
                continuation.yield()
            }
        }
        defer { heartbeat.cancel() }
        do {
            var rulesVersion = engine.rulesVersion
            var rules = try engine.rules().json
            // The default namespace's connection also says which namespaces exist, in the
            // welcome and then whenever the list changes (looked at once per heartbeat interval):
            // the follower replicates each of them on its own connection.
            let announcesNamespaces = namespace == DataDirectory.defaultNamespace
            var namespaces = announcesNamespaces ? self.data.namespacesOnDisk() : []
            var namespacesCheckedAt = ContinuousClock.now
            var welcome: Value = .object([
                "databaseID": .string(databaseID), "leaderLast": (try engine.lastLogID()).map { .string($0.rawValue) } ?? .null,
                "term": .number(Double(engine.currentTerm())), "rules": rules,
            ])
            if announcesNamespaces { welcome.set(.object(Self.namespaceList(namespaces)), at: Path(validatedKeys: ["namespaces"])) }
            try await self.send(.welcome, JSONWriter.bytes(welcome))
            if needsSnapshot {
                position = try await self.sendSnapshot(engine, follower: name, registered: id)
            }
            var lastSentAt = ContinuousClock.now
            var bell = self.doorbell.stream.makeAsyncIterator()
            // The tail runs on the connection's event loop: a commit's bell wakes that thread,
            // which reads the new entries (a few, from the memtable) and writes the frame right
            // there, instead of waking a pool thread that hands the write to the loop and is
            // woken again by its completion. On the path of every `--sync-followers` write.
            // Catch-up reads still run on the reader threads.
            try await withTaskExecutorPreference(EventLoopTaskExecutor(self.channel.eventLoop)) { () async throws in
                // The document is read (a storage read and a parse) only when its version moved,
                // not at every wake-up.
                func sendRulesIfChanged() async throws {
                    guard engine.rulesVersion != rulesVersion else { return }
                    rulesVersion = engine.rulesVersion
                    let current = try engine.rules().json
                    if current != rules {
                        rules = current
                        try await self.send(.rules, JSONWriter.bytes(current))
                        lastSentAt = .now
                    }
                }
                while true {
                    // Rules changed before the entries are read go out before them: a write made
                    // after a rules change reaches the follower after the new rules, so its
                    // listeners never hear it under the old ones.
                    try await sendRulesIfChanged()
                    // Everything durable after `position`, frame by frame: the first read after a
                    // wake-up on this task, the rest on the reader threads (see `tailEntriesMax`).
                    var readsHere = true
                    while true {
                        let (entries, drained) =
                            readsHere
                            ? try engine.readStoredLogTail(after: position, limit: Self.tailEntriesMax, bytesMax: Self.tailBytesMax)
                            : (try await engine.storedLogEntries(after: position, limit: Self.entriesPerFrameMax, bytesMax: Self.frameBytesMax), false)
                        readsHere = false
                        guard let last = entries.last else { break }
                        // Recorded before the write: the follower may apply and acknowledge the frame
                        // before this task resumes from the write, and an acknowledgement beyond
                        // what was recorded as sent disconnects it as forged.
                        self.registry.sent(id, upTo: last.id, count: entries.count)
                        try await self.send(.entries, ReplicatedEntries.encode(entries.map { ($0.id.rawValue, $0.bytes) }))
                        position = last.id
                        lastSentAt = .now
                        // The read reached the newest durable entry: nothing is left to read now, and
                        // a later commit rings the bell again (it rings after the durable mark moves,
                        // and the bell was taken before this read).
                        if drained { break }
                    }
                    try await sendRulesIfChanged()
                    let written = announcesNamespaces ? self.watches.takeFired(connection: id) : []
                    if !written.isEmpty {
                        try await self.sendHeartbeat(position, ["written": .object(Self.namespaceList(written))])
                        lastSentAt = .now
                    }
                    if announcesNamespaces, ContinuousClock.now - namespacesCheckedAt >= Self.heartbeatInterval {
                        namespacesCheckedAt = .now
                        // What the follower applied in the namespaces it parked stays in the log
                        // (held for `bootstrapHold`, renewed here every heartbeat interval while
                        // this connection lasts), until it connects to them again.
                        let parked = self.watches.positions(connection: id) { self.registry.isConnected(name: name, namespace: $0) }
                        for (parkedNamespace, after) in parked {
                            self.registry.hold(name: name, namespace: parkedNamespace, applied: after, for: Self.bootstrapHold)
                        }
                        let current = self.data.namespacesOnDisk()
                        if current != namespaces {
                            namespaces = current
                            try await self.sendHeartbeat(position, ["namespaces": .object(Self.namespaceList(current))])
                            lastSentAt = .now
                        }
                    }
                    if ContinuousClock.now - lastSentAt >= Self.heartbeatInterval {
                        try await self.sendHeartbeat(position)
                        lastSentAt = .now
                    }
                    guard await bell.next() != nil else { break }
                }
            }
        } catch {
            self.logger.info("follower connection ended", metadata: ["eddy.follower": "\(name)", "eddy.reason": "\(error)"])
            self.channel.close(promise: nil)
        }
    }

    /// A `heartbeat` naming `position` as the leader's last entry sent, with `extra` members
    /// (the namespace list, watched namespaces written).
    private func sendHeartbeat(_ position: LogID?, _ extra: [String: Value] = [:]) async throws {
        var body = extra
        body["leaderLast"] = position.map { .string($0.rawValue) } ?? .null
        try await self.send(.heartbeat, JSONWriter.bytes(.object(body)))
    }

    /// A JSON list (an object keyed "0", "1", ... as `Value` holds arrays).
    static func namespaceList(_ names: [String]) -> [String: Value] {
        var list: [String: Value] = [:]
        for (i, name) in names.enumerated() { list[String(i)] = .string(name) }
        return list
    }
}
