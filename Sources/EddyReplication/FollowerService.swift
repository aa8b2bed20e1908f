// The follower runtime of one namespace (`eddyd follow` runs one per namespace of the leader;
// see FollowerSupervisor): connects to the leader's log server, says which namespace and
// database it replicates and the last entry it applied, and applies every entry the leader
// sends through the engine (`Engine.submitReplicated`: tree, indexes, events, its own copy of
// the log, the last applied id in the same batch). It acknowledges applied entries, takes the
// leader's rules, and reconnects with backoff (100 ms doubling to 5 s) when the leader goes
// away, resuming after its last applied entry.
//
// A frame that fails its checksum or cannot be decoded resets the connection; nothing of it is
// applied. An entry the replica cannot apply (it diverged) stops replication for good: the
// status says why, reads go on being served.
//
// A namespace the follower does not have yet is first bootstrapped (`FollowerBootstrap`, a
// snapshot when the leader's log no longer starts at the beginning). Such a replica that is
// still empty when the leader refuses it for pruned entries (pruned while the connection was
// down) is discarded and bootstrapped again. The default namespace's connection hands the
// leader's namespace list to `onNamespaces`.
//
// Parking: a service of a namespace other than the default one ends (its connection closed, its
// thread gone, the namespace free to close on both sides) when `shouldPark` says other
// namespaces wait for a session and this one is idle (a heartbeat came: the leader had nothing
// to send for a second) or has had its connection for `parkAfter`. Its status then says
// `parked` and `parkedAt` is the newest entry it applied; the supervisor watches the namespace
// through the default namespace's connection (`sendWatch`) and starts a new service when the
// leader says it was written.
//
// Runs on its own thread with a blocking socket; at most `entriesInFlightMax` entries are
// being applied at once (`AppliedWindow`; the engine's commit queue bounds the rest). Frames
// are sent under `sendLock` (acknowledgements from the engine's threads, watches from the
// supervisor).

import EddyEngine
import EddyModel
import EddyProtocol
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

public final class FollowerService: Service, Sendable {
    /// Stays below the commit queue's 4,096 writes, so a replica's apply never meets a full
    /// queue; at 1,000 entries/s this rides out a 3-second fsync stall.
    static let entriesInFlightMax = 3072

    public struct Status: Sendable {
        public var connected = false
        public var leaderLast: LogID?
        public var applied: LogID?
        public var lastError: String?
        public var stopped = false
        /// Ended to let another namespace have a session (see the top); `parkedAt` is the newest
        /// entry applied then.
        public var parked = false
        public var parkedAt: LogID?
    }

    /// A busy namespace's session lasts at least this long before it parks for a waiting one.
    static let parkAfter: Duration = .seconds(5)

    public let leader: String
    /// The namespace this service replicates.
    public let namespace: String
    let name: String
    let data: DataDirectory
    /// Called with the leader's namespaces (default namespace's service only).
    let onNamespaces: @Sendable ([String]) -> Void
    /// Called with the watched namespaces the leader says were written (default namespace's
    /// service only).
    let onWritten: @Sendable ([String]) -> Void
    /// Called after each welcome, on the session's thread (default namespace's service only:
    /// the supervisor watches the parked namespaces again on the new connection).
    let onWelcome: @Sendable () -> Void
    /// Whether another namespace waits for a session (see the top).
    let shouldPark: @Sendable () -> Bool
    /// Held while a frame is sent.
    private let sendLock = Mutex(())
    /// Bootstrap the namespace before the first session (one that was not on disk at start).
    let bootstrapFirst: Bool
    let logger: Logger
    private let state = Mutex<(status: Status, client: (any FrameChannel)?, stopping: Bool, snapshotNeeded: String?)>((Status(), nil, false, nil))
    /// Signalled by a graceful shutdown: ends the backoff between sessions at once, so a stop
    /// (a cluster node changing leaders) never waits out a 5 s backoff.
    private let wake = DispatchSemaphore(value: 0)

    /// The replication secret sent in the hello (nil: none).
    let secret: String?

    /// The CA that signed the leader's certificate: TLS to a HOST:PORT leader (nil: plain).
    let caFile: String?

    /// A cluster's follower: a leader that refuses this replica as another history ends the
    /// service (like `snapshotNeeded`), so the next start sets the replica aside and bootstraps.
    let endsOnAnotherHistory: Bool

    public init(
        leader: String, name: String, data: DataDirectory, namespace: String = DataDirectory.defaultNamespace, bootstrapFirst: Bool = false,
        secret: String? = nil, caFile: String? = nil, endsOnAnotherHistory: Bool = false, logger: Logger,
        onNamespaces: @escaping @Sendable ([String]) -> Void = { _ in }, onWritten: @escaping @Sendable ([String]) -> Void = { _ in },
        onWelcome: @escaping @Sendable () -> Void = {}, shouldPark: @escaping @Sendable () -> Bool = { false }
    ) {
        self.onWritten = onWritten
        self.onWelcome = onWelcome
        self.shouldPark = shouldPark
        self.endsOnAnotherHistory = endsOnAnotherHistory
        self.namespace = namespace
        self.bootstrapFirst = bootstrapFirst
        self.onNamespaces = onNamespaces
        self.secret = secret
        self.caFile = caFile
        self.leader = leader
        self.name = name
        self.data = data
        var logger = logger
        logger[metadataKey: "eddy.ns"] = "\(namespace)"
        self.logger = logger
    }

    public var status: Status { self.state.withLock { $0.status } }

    /// Whether `run` was called (a service runs once; the supervisor makes a new one).
    var hasRun: Bool { self.ran.load(ordering: .relaxed) }
    private let ran = Atomic(false)

    public func run() async throws {
        self.ran.store(true, ordering: .relaxed)
        await withGracefulShutdownHandler {
            // The thread resumes the task as it ends (no thread blocked waiting for it: a
            // Dispatch thread per service ran out with dozens of namespaces, and a parked
            // service's end waited for one).
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let thread = Thread { [self] in
                    self.loop()
                    continuation.resume()
                }
                thread.name = "eddy-follower"
                thread.start()
            }
        } onGracefulShutdown: {
            self.stop()
        }
        if let reason = self.state.withLock({ $0.snapshotNeeded }) {
            // Ends the daemon (a service that returns stops the group): the next start bootstraps.
            throw EddyError(.unavailable, "\(reason); restart eddyd follow to bootstrap this replica from a snapshot")
        }
    }

    /// Ends the service: its connection is shut down and the backoff between sessions ends at
    /// once. Before `run`, the service returns as soon as it starts.
    func stop() {
        let client = self.state.withLock { state -> (any FrameChannel)? in
            state.stopping = true
            return state.client
        }
        client?.shutdown()
        self.wake.signal()
    }

    private var stopping: Bool { self.state.withLock { $0.stopping } }

    private func send(_ client: any FrameChannel, _ frame: Frame) throws(ProtocolError) {
        try self.sendLock.withLock { _ throws(ProtocolError) in try client.send(frame) }
    }

    /// Asks the leader (on this connection, the default namespace's) to say when each of
    /// `namespaces` has an entry after the one given. False when not connected: the supervisor
    /// sends its watches again after the next welcome.
    func sendWatch(_ namespaces: [String: LogID?]) -> Bool {
        guard let client = self.state.withLock({ $0.status.connected ? $0.client : nil }) else { return false }
        var members: [String: Value] = [:]
        for (namespace, after) in namespaces { members[namespace] = after.map { .string($0.rawValue) } ?? .null }
        do {
            try self.send(client, Frame(kind: .watch, requestID: 0, payload: JSONWriter.bytes(.object(["namespaces": .object(members)]))))
            return true
        } catch {
            return false
        }
    }

    private func loop() {
        var backoff: Duration = .milliseconds(100)
        var bootstrapped = !self.bootstrapFirst
        while !self.stopping {
            if !bootstrapped {
                do throws(EddyError) {
                    try FollowerBootstrap.prepare(
                        dataDirectory: self.data.path, leader: self.leader, name: self.name, namespace: self.namespace, secret: self.secret,
                        caFile: self.caFile, logger: self.logger)
                    bootstrapped = true
                    continue
                } catch {
                    self.fail("bootstrapping namespace \(self.namespace): \(error.message)")
                }
            } else {
                let outcome = self.session()
                self.state.withLock {
                    $0.client = nil
                    $0.status.connected = false
                }
                switch outcome {
                case .stopped: return
                case .parked: return
                case .diverged: return
                case .snapshotNeeded: return
                case .emptyReplicaNeedsSnapshot:
                    do throws(EddyError) {
                        if try self.data.discardEmptyReplica(namespace: self.namespace) {
                            bootstrapped = false
                            backoff = .milliseconds(100)
                            continue
                        }
                    } catch {
                        self.fail(error.message)
                    }
                case .connectedThenLost: backoff = .milliseconds(100)
                case .failed: break
                }
            }
            if self.stopping { return }
            let milliseconds = Int(backoff.components.seconds * 1000 + backoff.components.attoseconds / 1_000_000_000_000_000)
            _ = self.wake.wait(timeout: .now() + .milliseconds(milliseconds))
            backoff = min(backoff * 2, .seconds(5))
        }
    }

    private enum Outcome { case stopped, parked, diverged, snapshotNeeded, emptyReplicaNeedsSnapshot, connectedThenLost, failed }

    private func fail(_ message: String) {
        self.logger.warning("replication: \(message)", metadata: ["eddy.leader": "\(self.leader)"])
        self.state.withLock { $0.status.lastError = message }
    }

    /// One connection: hello, welcome, then entries until the connection ends.
    private func session() -> Outcome {
        let lease: EngineLease
        do {
            lease = try self.data.replicaLease(namespace: self.namespace)
        } catch {
            self.fail(error.message)
            return .failed
        }
        // Held for the session; released before an empty replica can be discarded.
        defer { lease.release() }
        let engine = lease.engine
        let client: any FrameChannel
        do {
            client = try connectToLeader(self.leader, caFile: self.caFile)
        } catch {
            self.fail("cannot reach the leader: \(error)")
            return .failed
        }
        let stopping = self.state.withLock { state -> Bool in
            state.client = client
            return state.stopping
        }
        if stopping { return .stopped }
        do {
            let lastApplied = try engine.lastLogID()
            var hello: Value = .object([
                "protocol": .number(Double(Frame.replicationProtocolVersion)), "ns": .string(self.namespace), "follower": .string(self.name),
                "databaseID": try engine.replicaOf().map { .string($0) } ?? .null,
                "lastApplied": lastApplied.map { .string($0.rawValue) } ?? .null,
            ])
            if let secret = self.secret { hello.set(.string(secret), at: Path(validatedKeys: ["secret"])) }
            try self.send(client, Frame(kind: .hello, requestID: 0, payload: JSONWriter.bytes(hello)))
            guard let first = try client.receive() else {
                self.fail("the leader closed the connection before its welcome")
                return .failed
            }
            guard first.kind == .welcome else {
                let refusal = (try? JSONParser.parse(first.payload)) ?? .null
                let message = "the leader refused this follower: \(JSONWriter.string(refusal["message"]))"
                self.fail(message)
                if refusal["reason"] == .string("snapshotNeeded"), lastApplied == nil, self.namespace != DataDirectory.defaultNamespace {
                    // An empty replica of a namespace found while running, whose entries the
                    // leader pruned after its bootstrap checked (between the two connections):
                    // nothing to keep, so it is bootstrapped from a snapshot now.
                    return .emptyReplicaNeedsSnapshot
                }
                if refusal["reason"] == .string("snapshotNeeded") || (self.endsOnAnotherHistory && refusal["reason"] == .string("anotherHistory")) {
                    self.state.withLock { $0.snapshotNeeded = message }
                    return .snapshotNeeded
                }
                return .failed
            }
            let welcome = try JSONParser.parse(first.payload)
            // Fencing by term: a leader whose term is older than what this replica applied was
            // deposed (its lease expired and another node wrote since); never take its entries.
            if case .number(let term) = welcome["term"], term < Double(engine.newestTerm) {
                self.fail(
                    "the leader at \(self.leader) is at leadership term \(UInt64(term)), older than term \(engine.newestTerm) this replica already applied: it was deposed; not replicating from it"
                )
                return .failed
            }
            self.announce(welcome["namespaces"])
            if case .string(let databaseID) = welcome["databaseID"], try engine.replicaOf() == nil { try engine.setReplicaOf(databaseID) }
            try self.adoptRules(welcome["rules"], engine)
            self.state.withLock {
                $0.status.connected = true
                $0.status.lastError = nil
                $0.status.applied = lastApplied
                if case .string(let text) = welcome["leaderLast"] { $0.status.leaderLast = LogID(text) }
            }
            self.logger.info("replicating", metadata: ["eddy.leader": "\(self.leader)", "eddy.last_applied": "\(lastApplied?.rawValue ?? "none")"])
            self.onWelcome()
            let outcome = try self.receiveEntries(client, engine)
            if outcome == .parked {
                // Every entry received is applied (the window drained): the position to watch.
                let at = try engine.lastLogID()
                self.state.withLock {
                    $0.status.parked = true
                    $0.status.parkedAt = at
                }
                self.logger.info("parked an idle namespace for another to replicate", metadata: ["eddy.applied": "\(at?.rawValue ?? "none")"])
            }
            return outcome
        } catch let error as EddyError {
            self.fail(error.message)
            return .failed
        } catch let error as ProtocolError {
            self.fail("the connection to the leader was reset: \(error.message)")
            return .failed
        } catch {
            self.fail("\(error)")
            return .failed
        }
    }

    /// Hands a `namespaces` list from the leader to `onNamespaces` (absent: nothing).
    private func announce(_ list: Value) {
        guard case .object(let members) = list else { return }
        let names = members.values.compactMap { value -> String? in
            if case .string(let name) = value { return name }
            return nil
        }
        self.onNamespaces(names.sorted())
    }

    private func adoptRules(_ document: Value, _ engine: Engine) throws(EddyError) {
        guard case .object = document, document != (try engine.rules().json) else { return }
        _ = try Blocking.wait { () async throws(EddyError) -> Rules in try await engine.applyReplicatedRules(document) }
    }

    private func receiveEntries(_ client: any FrameChannel, _ engine: Engine) throws -> Outcome {
        let window = AppliedWindow(entriesMax: Self.entriesInFlightMax)
        let failure = Mutex<EddyError?>(nil)
        let connectedAt = ContinuousClock.now
        let parks = self.namespace != DataDirectory.defaultNamespace
        // Wait for the entries still being applied before the next session reads lastLogID.
        defer { window.drain() }
        while let frame = try client.receive() {
            if let error = failure.withLock({ $0 }) {
                self.logger.critical("replication stopped: this replica cannot apply the leader's entries", metadata: ["eddy.error": "\(error)"])
                self.state.withLock {
                    $0.status.lastError = "replication stopped: \(error.message)"
                    $0.status.stopped = true
                }
                return .diverged
            }
            switch frame.kind {
            case .entries:
                let stored = try ReplicatedEntries.decode(frame.payload)
                var entries: [LogEntry] = []
                entries.reserveCapacity(stored.count)
                for (text, bytes) in stored {
                    guard let id = LogID(text) else { throw ProtocolError("entry id \(text.debugDescription) is not a log id") }
                    do {
                        entries.append(try LogEntryCodec.decode(id: id, bytes))
                    } catch {
                        throw ProtocolError("entry \(id) does not decode: \(error.message)")
                    }
                }
                guard let last = entries.last?.id else { continue }
                window.admit(entries.count)
                engine.submitReplicated(entries, stored: stored.map(\.bytes)) { [count = entries.count] result in
                    defer { window.release(count) }
                    switch result {
                    case .success:
                        self.state.withLock { $0.status.applied = last }
                        try? self.send(client, Frame(kind: .applied, requestID: 0, payload: JSONWriter.bytes(.object(["applied": .string(last.rawValue)]))))
                    case .failure(let error):
                        failure.withLock { if $0 == nil { $0 = error } }
                        client.shutdown()
                    }
                }
                self.state.withLock { if $0.status.leaderLast.map({ $0 < last }) ?? true { $0.status.leaderLast = last } }
            case .heartbeat:
                let heartbeat = (try? JSONParser.parse(frame.payload)) ?? .null
                if case .string(let text) = heartbeat["leaderLast"], let id = LogID(text) {
                    self.state.withLock { $0.status.leaderLast = id }
                }
                self.announce(heartbeat["namespaces"])
                if case .object(let written) = heartbeat["written"] {
                    self.onWritten(written.values.compactMap { if case .string(let name) = $0 { name } else { nil } })
                }
            case .rules:
                try self.adoptRules(try JSONParser.parse(frame.payload), engine)
            case .refused:
                self.fail("the leader ended replication: \(String(decoding: frame.payload, as: UTF8.self))")
                return .connectedThenLost
            default:
                throw ProtocolError("unexpected frame kind \(frame.kind) from the leader")
            }
            if parks, frame.kind == .heartbeat || ContinuousClock.now - connectedAt >= Self.parkAfter, self.shouldPark() {
                client.shutdown()
                return .parked
            }
        }
        if let error = failure.withLock({ $0 }) {
            self.logger.critical("replication stopped: this replica cannot apply the leader's entries", metadata: ["eddy.error": "\(error)"])
            self.state.withLock {
                $0.status.lastError = "replication stopped: \(error.message)"
                $0.status.stopped = true
            }
            return .diverged
        }
        if self.stopping { return .stopped }
        self.fail("the leader closed the connection")
        return .connectedThenLost
    }
}
