// One native-protocol connection (see EddyProtocol/Frame.swift): each request is answered with
// a frame carrying its request id; subscriptions are engine listeners whose batches become
// `events` frames. Frames are queued and written by one task on the channel's event loop, so a
// burst costs one hop and one write call; identical subscriptions share one encoded payload
// (`EventsPayloadCache`).
//
// Ordering: requests are taken in the order sent. A write is submitted to the engine before the
// next request is taken (so a connection's writes commit in order) and answered when durable,
// without holding up the writes after it: a client may pipeline writes. Any other request waits
// until the connection's earlier writes are answered, so it sees them.
// A subscription's `subscribed` answer precedes its first `events` frame (the attach
// batch, which describes the state after `liveAfter`); later frames follow log order.
// Bounds: at most `outstandingMax` events frames (plus one per subscription of the connection:
// one write may reach them all at once) and `outstandingBytesMax` bytes of them may
// wait to be written to the socket, and all connections and SSE streams together at most
// `budget.bytesMax` bytes (one frame is let through to a connection with nothing waiting while
// the budget is not full, so a large first frame still arrives); a subscriber that lets more
// pile up gets `behind` (with the last log id queued before it) and the connection closes; one
// that leaves a large frame unread while the budget is full is disconnected
// (`StalledReaderWatch`). Answers not yet
// written to the socket are bounded too: past `answerBytesMax` of them, the next request waits
// until the client has read enough (so a client that pipelines large reads without reading
// the answers holds at most that plus one answer); requests themselves are bounded by
// `NativeFrameHandler`, which stops reading the socket. Closing the connection removes its
// listeners.

import EddyEngine
import EddyModel
import Foundation
import EddyModel
import EddyProtocol
import EddyReplication
import Logging
import NIOCore
import Synchronization

final class NativeConnection: Sendable {
    struct State {
        var subscriptions: [UInt64: (engine: Engine, id: ListenerID)] = [:]
        /// Events of a subscription that arrived before its `subscribed` answer was sent.
        var held: [UInt64: [[ChildEvent]]] = [:]
        /// Subscriptions still attaching whose events were too large to send: dropped once the
        /// attach completes.
        var dropped: Set<UInt64> = []
        /// `events` frames queued or handed to the channel and not yet written to the socket.
        /// (Answers are not counted: they are bounded by the requests in flight.)
        var outstandingEvents = 0
        /// Their bytes (also reserved from `budget`).
        var outstandingEventBytes = 0
        /// Bytes of answers (every frame but events) queued or handed to the channel and not
        /// yet written to the socket.
        var outstandingAnswerBytes = 0
        /// Requests waiting for `outstandingAnswerBytes` to fall to `answerBytesMax`.
        var answerRoomWaiters: [CheckedContinuation<Void, Never>] = []
        /// Frames waiting for `flushOutbox`.
        var outbox: [(buffer: ByteBuffer, eventBytes: Int, answerBytes: Int)] = []
        var flushScheduled = false
        /// The log id of the last events frame queued for the socket.
        var lastQueued: LogID?
        var closed = false
        /// Writes submitted to the engine and not yet answered.
        var writesInFlight = 0
        /// Requests waiting until at most `threshold` writes are in flight.
        var writeWaiters: [(threshold: Int, continuation: CheckedContinuation<Void, Never>)] = []
        /// Running `tail` streams: their commit bells, finished when the connection closes.
        var tails: [UInt64: (token: UInt64, bell: AsyncStream<Void>.Continuation)] = [:]
        /// Whom the requests act for: unauthenticated until an `auth` request says otherwise.
        var identity = Authenticator.Identity(access: .unauthenticated, expires: nil)
        /// Bumped by every `auth` request: a token's expiry timer only revokes its own identity.
        var identityGeneration: UInt64 = 0
        /// Set when a reload of the keys and secrets left the identity's credential invalid:
        /// requests fail until the next `auth` request.
        var identityRevoked = false
        /// The `Authenticator.onReload` observer of the identity's credential.
        var reloadObserver: UInt64?
        /// Writes made when the connection ends (`onDisconnect`), in the order registered.
        var onDisconnect = OnDisconnectList()
        /// The namespaces this connection used, held open for as long as it lives: released
        /// when the connection object goes (its requests, subscriptions and tails are done by
        /// then), not at `closed()`, while a request may still be running.
        var leases: [String: EngineLease] = [:]
        /// Checkpoints made by this connection's requests and not released yet.
        var checkpoints: Set<String> = []
        /// Places in their engine's order of writes taken for subscribe requests as they were
        /// read (`reserveListenOrder`), until handled; at most one per queued request.
        var listenOrders: [UInt64: ListenOrder] = [:]
    }

    /// At most this many of a connection's writes are submitted and not yet durable; more wait.
    static let writesInFlightMax = 1024
    /// Answer bytes a client may leave unread before its next request waits.
    static let answerBytesMax = 4 << 20

    let channel: any Channel
    let data: DataDirectory
    let outstandingMax: Int
    let outstandingBytesMax: Int
    let budget: MemoryBudget
    let payloads: EventsPayloadCache
    let replication: ReplicationRole
    let doorbells: CommitDoorbells
    let authenticator: Authenticator
    let logger: Logger
    let state = Mutex(State())
    /// The server's count of onDisconnect writes still running (awaited at shutdown).
    let onDisconnectRuns: OnDisconnectRuns
    let subscriptionBounds: SubscriptionBounds
    /// Longest frame this connection sends (after the length prefix): what clients accept,
    /// `Frame.fromServerBytesMax`. A longer answer becomes a `limitExceeded` error instead.
    let frameBytesMax: Int

    init(
        channel: any Channel, data: DataDirectory, outstandingMax: Int, outstandingBytesMax: Int, budget: MemoryBudget,
        payloads: EventsPayloadCache, replication: ReplicationRole, doorbells: CommitDoorbells, authenticator: Authenticator = .emulator,
        onDisconnectRuns: OnDisconnectRuns = OnDisconnectRuns(), subscriptionBounds: SubscriptionBounds = SubscriptionBounds(),
        frameBytesMax: Int = Frame.fromServerBytesMax, logger: Logger
    ) {
        self.subscriptionBounds = subscriptionBounds
        self.frameBytesMax = frameBytesMax
        self.onDisconnectRuns = onDisconnectRuns
        self.authenticator = authenticator
        self.outstandingBytesMax = outstandingBytesMax
        self.budget = budget
        self.replication = replication
        self.doorbells = doorbells
        self.channel = channel
        self.data = data
        self.outstandingMax = outstandingMax
        self.payloads = payloads
        self.logger = logger
    }

    // MARK: Sending

    private enum Admission { case send(schedule: Bool), overflow, closed }

    /// Queues a frame for the socket. Frames are written by one task on the channel's event
    /// loop, which takes every queued frame and flushes once (`flushOutbox`): a burst of events
    /// costs one hop and one write call, not one per frame.
    func send(_ frame: Frame, logID: LogID? = nil) {
        guard Frame.headerBytes + frame.payload.count <= self.frameBytesMax else {
            // A client could not read it (and past 4 GiB its length would not fit the prefix).
            self.fail(frame.requestID, self.tooLarge("the answer to request \(frame.requestID)", bytes: frame.payload.count))
            return
        }
        self.send(encoded: ByteBuffer.frame(frame, allocator: self.channel.allocator), kind: frame.kind, logID: logID)
    }

    /// The error for a frame of `bytes` payload bytes (nil: more than fit) that this connection
    /// may not send.
    func tooLarge(_ what: String, bytes: Int?) -> EddyError {
        let size = bytes.map { "is \($0) bytes" } ?? "is larger"
        return EddyError(
            .limitExceeded,
            "\(what) \(size), more than one frame from eddyd may hold (\(self.frameBytesMax - Frame.headerBytes) bytes); read less at once: a query with a limit, or the children one by one (over REST a GET streams any size)")
    }

    /// Queues an encoded frame of `kind` (the buffer may be shared with other connections).
    private func send(encoded buffer: ByteBuffer, kind: Frame.Kind, logID: LogID?) {
        let admission = self.state.withLock { state -> Admission in
            if state.closed { return .closed }
            let isEvents = kind == .events || kind == .changes
            let eventBytes = isEvents ? buffer.readableBytes : 0
            if isEvents {
                // One frame per subscription more: a single write to a location that many of the
                // connection's subscriptions share makes one frame for each at once (the bytes
                // bound still holds; identical subscriptions share one payload).
                guard state.outstandingEvents < self.outstandingMax + state.subscriptions.count else { return .overflow }
                let alone = state.outstandingEvents == 0
                guard alone || state.outstandingEventBytes + eventBytes <= self.outstandingBytesMax else { return .overflow }
                guard alone ? self.budget.reserveUnlessFull(eventBytes) : self.budget.reserve(eventBytes) else { return .overflow }
                state.outstandingEvents += 1
                state.outstandingEventBytes += eventBytes
            }
            let answerBytes = isEvents ? 0 : buffer.readableBytes
            state.outstandingAnswerBytes += answerBytes
            state.outbox.append((buffer, eventBytes, answerBytes))
            if let logID { state.lastQueued = logID }
            defer { state.flushScheduled = true }
            return .send(schedule: !state.flushScheduled)
        }
        switch admission {
        case .closed: return
        case .overflow: self.cutOff()
        case .send(let schedule):
            if schedule { self.channel.eventLoop.execute { self.flushOutbox() } }
        }
    }

    /// On the event loop: writes every queued frame, flushes once, and counts them written
    /// when the last one is. Returns that write's future (nil when nothing was queued).
    @discardableResult
    private func flushOutbox() -> EventLoopFuture<Void>? {
        let frames = self.state.withLock { state -> [(buffer: ByteBuffer, eventBytes: Int, answerBytes: Int)] in
            state.flushScheduled = false
            defer { state.outbox.removeAll(keepingCapacity: true) }
            return state.outbox
        }
        guard !frames.isEmpty else { return nil }
        let written = self.channel.eventLoop.makePromise(of: Void.self)
        if frames.count == 1 {
            self.channel.writeAndFlush(frames[0].buffer, promise: written)
        } else {
            // Many small frames (a subscriber behind a busy location): one buffer through the
            // pipeline instead of one pipeline write per frame.
            var joined = self.channel.allocator.buffer(capacity: frames.reduce(0) { $0 + $1.buffer.readableBytes })
            for frame in frames { joined.writeImmutableBuffer(frame.buffer) }
            self.channel.writeAndFlush(joined, promise: written)
        }
        let events = frames.count { $0.eventBytes > 0 }
        let eventBytes = frames.reduce(0) { $0 + $1.eventBytes }
        let answerBytes = frames.reduce(0) { $0 + $1.answerBytes }
        // Large event frames a client leaves unread hold the budget: with it full, such a
        // client is disconnected (`StalledReaderWatch`).
        let watch =
            eventBytes >= StalledReaderWatch.bytesMin
            ? StalledReaderWatch(channel: self.channel, budget: self.budget) { [logger] in
                ServerMetrics.disconnectedForLag(.native)
                logger.info("native subscriber left its events unread while stream memory was full; disconnecting")
            } : nil
        written.futureResult.whenComplete { _ in
            watch?.stop()
            let ready = self.state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.outstandingEvents -= events
                state.outstandingEventBytes -= eventBytes
                state.outstandingAnswerBytes -= answerBytes
                guard state.outstandingAnswerBytes <= Self.answerBytesMax else { return [] }
                defer { state.answerRoomWaiters.removeAll() }
                return state.answerRoomWaiters
            }
            self.budget.release(eventBytes)
            for waiter in ready { waiter.resume() }
        }
        return written.futureResult
    }

    /// On the event loop: writes what is queued plus `last`, then closes (`.output`: a
    /// half-close, so the client reads everything sent and then the end of the stream).
    /// A peer that does not read what is queued before the last frame within this time is
    /// disconnected outright: its queued frames are dropped and their memory returned.
    static let closeGraceSeconds: Int64 = 10

    private func close(after last: Frame, mode: CloseMode) {
        let buffer = ByteBuffer.frame(last, allocator: self.channel.allocator)
        self.channel.eventLoop.execute {
            self.flushOutbox()
            self.channel.writeAndFlush(buffer).whenComplete { _ in
                self.channel.close(mode: mode, promise: nil)
            }
            self.channel.eventLoop.scheduleTask(in: .seconds(Self.closeGraceSeconds)) {
                self.channel.close(mode: .all, promise: nil)
            }
        }
    }

    /// Tells a subscriber that let too many frames pile up that it is behind, naming the last
    /// log id queued before this (every such frame reaches the socket first), and disconnects.
    private func cutOff() {
        let last = self.state.withLock { state -> LogID?? in
            if state.closed { return nil }
            state.closed = true
            return .some(state.lastQueued)
        }
        guard let last else { return }
        ServerMetrics.disconnectedForLag(.native)
        let payload: Value = .object(["lastDelivered": last.map { .string($0.rawValue) } ?? .null])
        self.logger.info("native subscriber fell behind; disconnecting", metadata: ["eddy.last_delivered": "\(last?.rawValue ?? "none")"])
        self.close(after: Frame(kind: .behind, requestID: 0, payload: JSONWriter.bytes(payload)), mode: .output)
        self.closed()  // its listeners go now, not when the client hangs up
        self.budget.trimSoon()
        // Its queued frames are freed when the channel is gone (the client hangs up, or the
        // grace period ends): trim again then.
        let budget = self.budget
        self.channel.closeFuture.whenComplete { _ in budget.trimSoon() }
    }

    func answer(_ kind: Frame.Kind, _ requestID: UInt64, _ payload: Value) {
        self.send(Frame(kind: kind, requestID: requestID, payload: JSONWriter.bytes(payload)))
    }

    /// A `value` answer, `{"value": <json>}`, around JSON text written elsewhere (a read's).
    func answerValue(_ requestID: UInt64, json: [UInt8]) {
        var payload: [UInt8] = Array(#"{"value":"#.utf8)
        payload.reserveCapacity(payload.count + json.count + 1)
        payload.append(contentsOf: json)
        payload.append(UInt8(ascii: "}"))
        self.send(Frame(kind: .value, requestID: requestID, payload: payload))
    }

    /// Answers a value read in export form, refused when it would not fit a frame.
    func answerExport(_ requestID: UInt64, _ value: Value) throws(EddyError) {
        let json = JSONWriter.bytes(value)
        guard Frame.headerBytes + 10 + json.count <= self.frameBytesMax else { throw self.tooLarge("the value", bytes: json.count) }
        self.answerValue(requestID, json: json)
    }

    func fail(_ requestID: UInt64, _ error: EddyError) {
        self.answer(.error, requestID, .object(["code": .string(error.code.description), "message": .string(error.message)]))
    }

    /// The connection closed, or is closing (cut off, refused).
    var isClosed: Bool { self.state.withLock { $0.closed } }

    /// Ends the connection with an error frame. `mode: .output` (a refusal while the client may
    /// still be sending: the caller discards what it reads) lets the client read the error
    /// before the end, where closing both sides could reset the connection first.
    func protocolError(_ error: ProtocolError, code: EddyError.Code = .invalidArgument, mode: CloseMode = .all) {
        let first = self.state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        let payload: Value = .object(["code": .string(code.description), "message": .string(error.message)])
        self.close(after: Frame(kind: .error, requestID: 0, payload: JSONWriter.bytes(payload)), mode: mode)
    }

    // MARK: Requests

    func handle(_ frame: Frame) async {
        defer {
            // A subscribe refused before it listened gives its place up at once.
            if frame.kind == .subscribe { self.state.withLock { $0.listenOrders.removeValue(forKey: frame.requestID) }?.cancel() }
        }
        await self.waitForAnswerRoom()
        do throws(EddyError) {
            let body: Value
            do {
                body = try JSONParser.parse(frame.payload)
            } catch {
                throw EddyError(.invalidJSON, "frame \(frame.requestID): payload is not JSON: \(error.message)")
            }
            if frame.kind == .auth {
                try await self.authenticate(frame.requestID, body)
                return
            }
            let access = try self.access()
            if frame.kind == .checkpoint || frame.kind == .releaseCheckpoint {
                try await self.checkpointRequest(frame, body, access: access)
                return
            }
            let engine = try self.engine(
                namespace: try Self.string(body, "ns", optional: true) ?? DataDirectory.defaultNamespace,
                create: access.isAdmin || !self.authenticator.isConfigured)
            if frame.kind != .write { await self.waitForWrites(atMost: 0) }
            switch frame.kind {
            case .get:
                // `"etag": true`: also the value's ETag, for a conditional write (`ifMatch`).
                // `<path>/.priority`: the location's priority (null when none).
                if case .string(let text) = body["path"], text.hasSuffix("/" + Value.priorityKey) {
                    let node = try Path(allowingPriority: text).parent ?? .root
                    self.answer(.value, frame.requestID, .object(["value": try await engine.priority(node, access: access)]))
                    return
                }
                // `"priorities": true`: the value in export form (`.priority` members). An ETag
                // is of the export form either way (it covers the priorities, as a conditional
                // write compares it). Without a priority at or below the path the export form is
                // the plain value, read with the bound below.
                if try Self.flag(body, "priorities"), try await engine.holdsPriorities(at: try Self.path(body)) {
                    let value = try await engine.getExport(try Self.path(body), access: access)
                    guard body["etag"] == .bool(true) else {
                        try self.answerExport(frame.requestID, value)
                        return
                    }
                    self.answer(.value, frame.requestID, .object(["value": value, "etag": .string(ETag.of(value))]))
                    return
                }
                guard body["etag"] == .bool(true) else {
                    // Bounded while it is read, so a huge location is refused before it is built.
                    let path = try Self.path(body)
                    let bytesMax = self.frameBytesMax - Frame.headerBytes - 10  // `{"value":` and `}`
                    // (A single leaf is read whole, then measured.)
                    guard let json = try await engine.getJSON(path, access: access, bytesMax: bytesMax), json.count <= bytesMax else {
                        throw self.tooLarge("the value at \(path.abbreviated)", bytes: nil)
                    }
                    self.answerValue(frame.requestID, json: json)
                    return
                }
                let export = try await engine.getExport(try Self.path(body), access: access)
                self.answer(.value, frame.requestID, .object(["value": export.withoutPriorities, "etag": .string(ETag.of(export))]))
            case .query:
                let query = try Self.query(body) ?? Query(order: .key)
                if try Self.flag(body, "priorities"), try await engine.holdsPriorities(at: try Self.path(body)) {
                    try self.answerExport(frame.requestID, try await engine.queryExport(try Self.path(body), query, access: access))
                    return
                }
                self.answerValue(frame.requestID, json: try await engine.queryJSON(try Self.path(body), query, access: access))
            case .write:
                try await self.write(frame.requestID, body, engine, access: access)
            case .subscribe:
                try await self.subscribe(frame.requestID, body, engine, access: access)
            case .tail:
                // The change log of a location: for whoever may read all of it, with read rules
                // that depend on neither the data nor the time (the log is history: what was
                // written while such a reader could not read must not reach it). Checked again
                // before every frame.
                let location = body["path"].isNull ? Path(validatedKeys: []) : try Self.path(body)
                try await Self.checkTail(location, engine, access)
                try self.tail(frame.requestID, body, engine)
            case .getRules, .setRules:
                guard access.isAdmin || !self.authenticator.isConfigured else {
                    throw EddyError(.permissionDenied, "Permission denied: the rules are for the admin credential only")
                }
                if frame.kind == .getRules {
                    self.answer(.value, frame.requestID, .object(["value": try engine.rules().json]))
                } else {
                    let rules = try await engine.setRules(body["document"])
                    self.answer(.value, frame.requestID, .object(["value": .object(["indexes": .number(Double(rules.indexes.count))])]))
                }
            case .status:
                self.answer(.value, frame.requestID, .object(["value": try self.replication.status(engine, namespace: try Self.string(body, "ns", optional: true) ?? DataDirectory.defaultNamespace)]))
            case .onDisconnect:
                try await self.registerOnDisconnect(frame.requestID, body, engine: engine, access: access)
            case .cancelDisconnect:
                try self.cancelOnDisconnect(frame.requestID, body)
            case .unsubscribe:
                let subscription = try Self.requestID(body["subscription"], field: "subscription", what: "the request id of the subscribe")
                let removed = self.state.withLock { $0.subscriptions.removeValue(forKey: subscription) }
                if let removed {
                    ServerMetrics.unsubscribed(.native)
                    await removed.engine.removeListener(removed.id)
                }
                self.answer(
                    .unsubscribed, frame.requestID, .object(["subscription": .number(Double(subscription)), "removed": .bool(removed != nil)]))
            default:
                throw EddyError(.invalidArgument, "frame kind \(frame.kind) is sent by the server, not by clients")
            }
        } catch {
            self.fail(frame.requestID, error)
        }
    }

    /// The `auth` request: verifies the credential and makes it the connection's identity.
    private func authenticate(_ requestID: UInt64, _ body: Value) async throws(EddyError) {
        let credential = try Self.string(body, "token", optional: true)
        let override = body["authVariableOverride"]
        let identity = try await self.authenticator.identify(
            credential: credential, override: override.isNull && !Self.has(body, "authVariableOverride") ? nil : JSONWriter.string(override))
        // Subscriptions belong to the identity that made them: a new identity revokes them (the
        // client subscribes again as who it is now), as does the token's expiry.
        let overrideText = override.isNull && !Self.has(body, "authVariableOverride") ? nil : JSONWriter.string(override)
        let (generation, previousObserver) = self.state.withLock { state -> (UInt64, UInt64?) in
            state.identity = identity
            state.identityRevoked = false
            state.identityGeneration += 1
            defer { state.reloadObserver = nil }
            return (state.identityGeneration, state.reloadObserver)
        }
        if let previousObserver { self.authenticator.removeReloadObserver(previousObserver) }
        self.revokeSubscriptions("the connection authenticated again; subscribe again")
        if credential != nil || overrideText != nil {
            // A reload (SIGHUP) that leaves this credential invalid revokes the identity.
            let authenticator = self.authenticator
            let observer = authenticator.onReload { [weak self] in
                Task { [weak self] in
                    guard await !authenticator.stillValid(credential: credential, override: overrideText), let self else { return }
                    let current = self.state.withLock { state -> Bool in
                        guard state.identityGeneration == generation, !state.closed else { return false }
                        state.identityRevoked = true
                        return true
                    }
                    guard current else { return }
                    self.revokeSubscriptions("the credential is no longer valid (the server's keys or secrets changed); authenticate again and subscribe again")
                }
            }
            let closed = self.state.withLock { state -> Bool in
                if !state.closed, state.identityGeneration == generation { state.reloadObserver = observer }
                return state.closed || state.identityGeneration != generation
            }
            if closed { authenticator.removeReloadObserver(observer) }
        }
        if let expires = identity.expires {
            Task { [weak self] in
                try? await Task.sleep(for: .seconds(max(0, expires.timeIntervalSinceNow)))
                guard let self, self.state.withLock({ $0.identityGeneration == generation && !$0.closed }) else { return }
                self.revokeSubscriptions("the auth token expired; authenticate with a fresh token and subscribe again")
            }
        }
        var uid: Value = .null
        if case .map(let auth) = identity.access.auth, case .string(let id)? = auth["uid"] { uid = .string(id) }
        self.answer(
            .value, requestID,
            .object([
                "value": .object([
                    "uid": uid, "admin": .bool(identity.access.isAdmin),
                    "expires": identity.expires.map { .number(($0.timeIntervalSince1970 * 1000).rounded()) } ?? .null,
                ])
            ]))
    }

    /// Ends every subscription with an `error` frame, code `authRevoked` (Firebase's
    /// `auth_revoked`), and removes its listener.
    private func revokeSubscriptions(_ message: String) {
        let revoked = self.state.withLock { state -> [(UInt64, (engine: Engine, id: ListenerID))] in
            defer { state.subscriptions.removeAll() }
            return Array(state.subscriptions)
        }
        guard !revoked.isEmpty else { return }
        ServerMetrics.unsubscribed(.native, count: revoked.count)
        for (requestID, _) in revoked {
            self.answer(.error, requestID, .object(["code": .string("authRevoked"), "message": .string(message)]))
        }
        Task { for (_, subscription) in revoked { await subscription.engine.removeListener(subscription.id) } }
    }

    /// The connection's access now; an expired token fails (re-authenticate with a fresh one).
    func access() throws(EddyError) -> Access {
        let (identity, revoked) = self.state.withLock { ($0.identity, $0.identityRevoked) }
        if revoked {
            throw EddyError(
                .unauthenticated, "the credential is no longer valid (the server's keys or secrets changed); send an auth request with a valid one")
        }
        if let expires = identity.expires, expires.timeIntervalSinceNow <= 0 {
            throw EddyError(.unauthenticated, "Auth token is expired; send an auth request with a fresh token")
        }
        return identity.access
    }

    static func has(_ body: Value, _ name: String) -> Bool {
        guard case .object(let members) = body else { return false }
        return members[name] != nil
    }

    /// A write request's operation, `ifMatch` and silenced subscriptions; throws on bad input.
    /// The `op`, `path` and `value` of a `write` or `onDisconnect` request; `push` only when
    /// `allowsPush` (a push at disconnect has no one to tell its key to).
    static func operation(_ body: Value, request: String, allowsPush: Bool) throws(EddyError) -> WriteOperation {
        let op = try Self.string(body, "op", optional: false)
        // A set or remove may name `<path>/.priority`: the location's priority.
        let path = op == "set" || op == "remove" ? try Path(allowingPriority: try self.string(body, "path", optional: false)!) : try Self.path(body)
        let value = body["value"]
        // A set, update or push names its value, null included: a request that lost its value
        // (a client bug) must not delete the location as `null` would.
        if op == "set" || op == "update" || (op == "push" && allowsPush), !Self.has(body, "value") {
            throw EddyError(.invalidArgument, "\(request) op \(op ?? "") needs a \"value\" (null removes the location)")
        }
        switch op {
        case "set": return .set(path, value)
        case "update": return try WriteOperation.update(at: path, body: value)
        case "push" where allowsPush: return .push(path, value)
        case "remove": return .remove(path)
        case let op:
            throw EddyError(
                .invalidArgument, "\(request) op \(op ?? "") is not one of set, update\(allowsPush ? ", push" : ""), remove")
        }
    }

    private func parseWrite(_ body: Value) throws(EddyError) -> (WriteOperation, String?, Set<ListenerID>) {
        let operation = try Self.operation(body, request: "write", allowsPush: true)
        // A compare-and-set: applied only while the location's ETag is this one (set, remove).
        let ifMatch = try Self.string(body, "ifMatch", optional: true)
        var silenced = Set<ListenerID>()
        switch body["silence"] {
        case .null: break
        case .object(let list):  // a JSON array arrives as an object with keys "0", "1", ...
            let own = self.state.withLock { $0.subscriptions }
            for element in list.values {
                let id = try Self.requestID(element, field: "silence", what: "a list of subscription ids of this connection")
                guard let subscription = own[id] else {
                    throw EddyError(.invalidArgument, "silence names \(id), which is not a subscription of this connection")
                }
                silenced.insert(subscription.id)
            }
        default:
            throw EddyError(.invalidArgument, "field \"silence\" must be a list of subscription ids, not \(JSONWriter.string(body["silence"]))")
        }
        return (operation, ifMatch, silenced)
    }

    /// A write request, parsed: what `submitWrite` submits.
    private struct ParsedWrite {
        let namespace: String
        let operation: WriteOperation
        let ifMatch: String?
        let silenced: Set<ListenerID>
    }

    private func write(_ requestID: UInt64, _ body: Value, _ engine: Engine, access: Access) async throws(EddyError) {
        let write = try self.parseWrite(body, engine)
        await self.waitForWrites(atMost: Self.writesInFlightMax - 1)
        // A full commit queue (many connections writing at once) holds this connection back
        // too: its unread requests stay in the socket.
        await engine.waitForCommitRoom()
        try self.submitWrite(requestID, write, engine, access: access)
    }

    /// Write requests of at most this many payload bytes may be handled on the event loop
    /// (`handleWriteAtOnce`); larger ones are parsed on the task, off the loop.
    static let writeAtOnceBytesMax = 64 << 10

    /// On the event loop, for a `write` frame that arrives while no earlier request of the
    /// connection is still being handled: handles it at once when nothing makes it wait
    /// (answer room, the connection's writes in flight, the engine's commit queue, an engine
    /// already open) and returns true. It does exactly what `handle` does for such a write,
    /// without the hop to the connection's task and back (a thread wake-up each way; the Swift
    /// executor took a fifth of eddyd's CPU under 64 clients of small writes). False, with
    /// nothing done or answered: the caller queues the frame for `handle`, which waits where
    /// needed and words any error.
    func handleWriteAtOnce(_ frame: Frame) -> Bool {
        guard frame.kind == .write, frame.payload.count <= Self.writeAtOnceBytesMax else { return false }
        let room = self.state.withLock { state in
            !state.closed && state.outstandingAnswerBytes <= Self.answerBytesMax && state.writesInFlight < Self.writesInFlightMax
        }
        guard room,
            let body = try? JSONParser.parse(frame.payload),
            let access = try? self.access(),
            let namespace = try? Self.string(body, "ns", optional: true) ?? DataDirectory.defaultNamespace,
            let engine = self.state.withLock({ $0.leases[namespace]?.engine }),
            engine.hasCommitRoom
        else { return false }
        do throws(EddyError) {
            try self.submitWrite(frame.requestID, try self.parseWrite(body, engine), engine, access: access)
        } catch {
            self.fail(frame.requestID, error)
        }
        return true
    }

    /// On the event loop, as a subscribe frame is read: takes its listen's place in the engine's
    /// order of writes (`ListenOrder`), so a write another client sends after it is not applied
    /// before it. Only for a namespace this connection holds or one already open (leased here
    /// for the connection's life); never opens one on the loop.
    func reserveListenOrder(for frame: Frame) {
        guard frame.kind == .subscribe, frame.payload.count <= Self.writeAtOnceBytesMax,
            let body = try? JSONParser.parse(frame.payload),
            let namespace = try? Self.string(body, "ns", optional: true) ?? DataDirectory.defaultNamespace
        else { return }
        var engine = self.state.withLock { $0.leases[namespace]?.engine }
        if engine == nil, let lease = self.data.leaseIfOpen(namespace: namespace) {
            engine = self.state.withLock { state in
                if let held = state.leases[namespace] { return held.engine }
                state.leases[namespace] = lease
                return lease.engine
            }
        }
        guard let engine else { return }
        let order = engine.reserveListenOrder()
        self.state.withLock { $0.listenOrders[frame.requestID] = order }
    }

    /// The engine of `namespace`, leased for the connection's life at its first use (opening
    /// it may block: never called on the event loop).
    private func engine(namespace: String, create: Bool) throws(EddyError) -> Engine {
        if let held = self.state.withLock({ $0.leases[namespace]?.engine }) { return held }
        let lease = try self.data.lease(namespace: namespace, create: create)
        return self.state.withLock { state in
            if let held = state.leases[namespace] { return held.engine }  // another request leased it meanwhile
            state.leases[namespace] = lease
            return lease.engine
        }
    }

    /// `parseWrite`, counting a refusal like one the engine makes.
    private func parseWrite(_ body: Value, _ engine: Engine) throws(EddyError) -> ParsedWrite {
        do {
            let namespace = try Self.string(body, "ns", optional: true) ?? DataDirectory.defaultNamespace
            let (operation, ifMatch, silenced) = try self.parseWrite(body)
            return ParsedWrite(namespace: namespace, operation: operation, ifMatch: ifMatch, silenced: silenced)
        } catch {
            engine.recordRefusedWrite(error)
            throw error
        }
    }

    /// Submits a parsed write and answers it once durable (and confirmed by followers, under
    /// `--sync-followers`), counting it in flight until then.
    private func submitWrite(_ requestID: UInt64, _ write: ParsedWrite, _ engine: Engine, access: Access) throws(EddyError) {
        let namespace = write.namespace
        self.state.withLock { $0.writesInFlight += 1 }
        do {
            try engine.submit(write.operation, ifMatch: write.ifMatch, silencing: write.silenced, access: access) { result in
                switch result {
                case .success(.committed(let committed)):
                    var answer: [String: Value] = ["logID": .string(committed.logID.rawValue)]
                    if let name = committed.pushedKey { answer["name"] = .string(name) }
                    // A `<path>/.priority` set answers the priority stored: null where the
                    // location has no data (only a node that exists has one).
                    if case .set(let path, _) = write.operation, path.lastKey == Value.priorityKey { answer["priority"] = committed.value }
                    if case .leader(_, let sync, _) = self.replication, sync > 0 {
                        // Confirmed by followers: answered later, without holding up the writes behind it.
                        let answer = answer
                        self.replication.confirm(committed.logID, namespace: namespace) { confirmed in
                            switch confirmed {
                            case .success: self.answer(.written, requestID, .object(answer))
                            case .failure(let error): self.fail(requestID, error)
                            }
                            self.writeAnswered()
                        }
                        return
                    }
                    self.answer(.written, requestID, .object(answer))
                case .success(.preconditionFailed(let current, let etag)):
                    // The current value and its ETag come along, so a transaction retries at once.
                    self.answer(
                        .error, requestID,
                        .object([
                            "code": .string(EddyError.Code.preconditionFailed.description),
                            "message": .string("the write was conditional (ifMatch) and the value changed; it was not applied"),
                            "current": current, "etag": .string(etag),
                        ]))
                case .failure(let error):
                    self.fail(requestID, error)
                }
                self.writeAnswered()
            }
        } catch {
            self.writeAnswered()
            throw error
        }
    }

    /// Returns once at most `answerBytesMax` bytes of answers wait for the socket (at once on
    /// a closed connection: its queued frames are dropped, which resumes waiters too).
    private func waitForAnswerRoom() async {
        // Checked first without a continuation: one that is resumed at once still suspends the
        // task and queues it on the executor again, a thread hop per request.
        if self.state.withLock({ $0.closed || $0.outstandingAnswerBytes <= Self.answerBytesMax }) { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = self.state.withLock { state -> Bool in
                if state.closed || state.outstandingAnswerBytes <= Self.answerBytesMax { return true }
                state.answerRoomWaiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Returns once at most `threshold` of this connection's writes are in flight.
    private func waitForWrites(atMost threshold: Int) async {
        if self.state.withLock({ $0.writesInFlight <= threshold }) { return }  // see waitForAnswerRoom
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = self.state.withLock { state -> Bool in
                if state.writesInFlight <= threshold { return true }
                state.writeWaiters.append((threshold, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func writeAnswered() {
        let ready = self.state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.writesInFlight -= 1
            var ready: [CheckedContinuation<Void, Never>] = []
            state.writeWaiters.removeAll { waiter in
                guard state.writesInFlight <= waiter.threshold else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    private func subscribe(_ requestID: UInt64, _ body: Value, _ engine: Engine, access: Access) async throws(EddyError) {
        var since: LogID? = nil
        if let text = try Self.string(body, "since", optional: true) {
            guard let id = LogID(text) else { throw EddyError(.invalidArgument, "\"since\" \(text) is not a log id") }
            since = id
        }
        let path = try Self.path(body)
        if since != nil, !engine.mayReplayLog(at: path, access) {
            throw EddyError(
                .notFound,
                "cannot resume after log id \(since!): the read rules at \(path.abbreviated) depend on the data or the time, so the log is not replayed to this reader; subscribe again without since")
        }
        let query = try Self.query(body)
        let selection: EventSelection
        switch try Self.string(body, "events", optional: true) {
        case nil, "all": selection = .childEventsAndValueChanges
        case "value": selection = .valueChangesOnly
        case let other?:
            throw EddyError(.invalidArgument, "\"events\" must be \"all\" or \"value\", not \(JSONWriter.string(.string(other)))")
        }
        let coalesces = try Self.flag(body, "coalesce")
        let exportsPriorities = try Self.flag(body, "priorities")
        if exportsPriorities, selection != .valueChangesOnly {
            throw EddyError(.invalidArgument, "\"priorities\": true needs \"events\": \"value\" (values in export form come as changes)")
        }
        try self.reserveStream(requestID)
        guard ServerMetrics.nativeSubscriptions < self.subscriptionBounds.total else {
            _ = self.state.withLock { $0.held.removeValue(forKey: requestID) }
            throw EddyError(
                .limitExceeded,
                "eddyd holds \(self.subscriptionBounds.total) subscriptions already (--subscriptions-max); try again once some have ended")
        }
        let attachment: ListenerAttachment
        let order = self.state.withLock { $0.listenOrders.removeValue(forKey: requestID) }
        do {
            attachment = try await engine.listen(
                path, query: query, since: since, selection: selection, access: access, coalescesEntries: coalesces,
                exportsPriorities: exportsPriorities, order: order
            ) { events in
                let send = self.state.withLock { state -> Bool in
                    guard state.held[requestID] != nil else { return true }
                    state.held[requestID]!.append(events)
                    return false
                }
                if send { self.sendEvents(requestID, events) }
            }
        } catch {
            _ = self.state.withLock { $0.held.removeValue(forKey: requestID) }
            throw error
        }
        self.answer(
            .subscribed, requestID,
            .object(["subscription": .number(Double(requestID)), "liveAfter": attachment.liveAfter.map { .string($0.rawValue) } ?? .null])
                )
        // Release what arrived meanwhile, in order, then send directly. The first is the attach
        // batch (no log ids) unless it was queued behind earlier groups' events: its payload is
        // shared with subscriptions that attached alike (`EventsPayloadCache.AttachKey`).
        let attachKey = attachment.liveAfter.map {
            EventsPayloadCache.AttachKey(
                engine: ObjectIdentifier(engine), location: path, query: query, selection: selection, exportsPriorities: exportsPriorities,
                liveAfter: $0)
        }
        var first = true
        while true {
            let batches = self.state.withLock { state -> [[ChildEvent]]? in
                if state.dropped.remove(requestID) != nil || state.closed {
                    // Its events were too large to send (`endOversizedSubscription`), or the
                    // connection closed while it attached (`closed()` found nothing to remove).
                    state.held.removeValue(forKey: requestID)
                    return nil
                }
                let batches = state.held[requestID] ?? []
                if batches.isEmpty {
                    state.held.removeValue(forKey: requestID)
                    state.subscriptions[requestID] = (engine, attachment.id)
                    ServerMetrics.subscribed(.native)
                } else {
                    state.held[requestID] = []
                }
                return batches
            }
            guard let batches else {
                await engine.removeListener(attachment.id)
                return
            }
            if batches.isEmpty { break }
            for batch in batches {
                if first, let attachKey, !batch.isEmpty, batch.allSatisfy({ $0.logID == nil }) {
                    self.sendEvents(requestID, batch, payload: self.payloads.attachPayload(for: attachKey, events: batch))
                } else {
                    self.sendEvents(requestID, batch)
                }
                first = false
            }
        }
    }

    /// Takes `requestID` for a new subscription (held until it is live) when the connection may
    /// open one: the id must not name a subscription or tail the connection has open (it would
    /// hide the older one, which then outlived the connection), and the connection must hold
    /// fewer than `subscriptionBounds.perConnection`. `tail` passes `forTail` and takes the
    /// id itself once it is set up.
    func reserveStream(_ requestID: UInt64, forTail: Bool = false) throws(EddyError) {
        let refusal = self.state.withLock { state -> EddyError? in
            if state.subscriptions[requestID] != nil || state.held[requestID] != nil || state.tails[requestID] != nil {
                return EddyError(
                    .invalidArgument,
                    "request id \(requestID) names a subscription or tail this connection has open; unsubscribe it first, or use another id")
            }
            if state.subscriptions.count + state.held.count + state.tails.count >= self.subscriptionBounds.perConnection {
                return EddyError(
                    .limitExceeded,
                    "this connection has \(self.subscriptionBounds.perConnection) subscriptions and tails open (--subscriptions-per-connection-max); unsubscribe some first")
            }
            if !forTail { state.held[requestID] = [] }
            return nil
        }
        if let refusal { throw refusal }
    }

    private func sendEvents(_ requestID: UInt64, _ events: [ChildEvent]) {
        let bytes = self.payloads.payload(for: events).count
        guard Frame.headerBytes + bytes <= self.frameBytesMax else {
            self.endOversizedSubscription(requestID, bytes: bytes)
            return
        }
        ServerMetrics.delivered(.native, events: events.count)
        self.send(encoded: self.payloads.frame(for: events, requestID: requestID), kind: .events, logID: events.last?.logID)
    }

    /// Sends `events` whose payload was encoded already (an attach batch's, shared).
    private func sendEvents(_ requestID: UInt64, _ events: [ChildEvent], payload: [UInt8]) {
        guard Frame.headerBytes + payload.count <= self.frameBytesMax else {
            self.endOversizedSubscription(requestID, bytes: payload.count)
            return
        }
        ServerMetrics.delivered(.native, events: events.count)
        self.send(Frame(kind: .events, requestID: requestID, payload: payload), logID: events.last?.logID)
    }

    /// A subscription whose events would not fit a frame ends with a `limitExceeded` error, and
    /// its listener goes (one still attaching is dropped when its attach completes).
    private func endOversizedSubscription(_ requestID: UInt64, bytes: Int) {
        let removed = self.state.withLock { state -> (engine: Engine, id: ListenerID)? in
            if let removed = state.subscriptions.removeValue(forKey: requestID) { return removed }
            if state.held[requestID] != nil { state.dropped.insert(requestID) }
            return nil
        }
        self.fail(requestID, self.tooLarge("an events frame of subscription \(requestID)", bytes: bytes))
        guard let removed else { return }
        ServerMetrics.unsubscribed(.native)
        Task { await removed.engine.removeListener(removed.id) }
    }

    /// The connection closed (or was cut off): its listeners go.
    func closed() {
        let reloadObserver = self.state.withLock { state -> UInt64? in
            state.closed = true  // an auth request finishing now then removes its own observer
            defer { state.reloadObserver = nil }
            return state.reloadObserver
        }
        if let reloadObserver { self.authenticator.removeReloadObserver(reloadObserver) }
        let (subscriptions, tails, onDisconnect) = self.state.withLock {
            state -> ([(engine: Engine, id: ListenerID)], [(token: UInt64, bell: AsyncStream<Void>.Continuation)], [OnDisconnectWrite]) in
            state.closed = true
            defer {
                state.subscriptions.removeAll()
                state.tails.removeAll()
            }
            // Taken once: a second call (a cut-off connection closing later) finds none.
            return (Array(state.subscriptions.values), Array(state.tails.values), state.onDisconnect.takeAll(budget: self.onDisconnectRuns.budget))
        }
        self.logger.debug("native connection closed", metadata: ["eddy.onDisconnectWrites": "\(onDisconnect.count)"])
        self.releaseCheckpoints()
        self.onDisconnectRuns.run(onDisconnect, data: self.data, logger: self.logger)
        for tail in tails {
            self.doorbells.remove(tail.token)
            tail.bell.finish()
        }
        guard !subscriptions.isEmpty else { return }
        ServerMetrics.unsubscribed(.native, count: subscriptions.count)
        Task {
            for subscription in subscriptions { await subscription.engine.removeListener(subscription.id) }
        }
    }

    // MARK: Payload fields

    static func string(_ body: Value, _ name: String, optional: Bool) throws(EddyError) -> String? {
        switch body[name] {
        case .string(let s): return s
        case .null where optional: return nil
        default: throw EddyError(.invalidArgument, "field \"\(name)\" must be a string, not \(JSONWriter.string(body[name]))")
        }
    }

    /// A request id sent as a JSON number: a whole number from 0 to 2^53 (JSON numbers are
    /// doubles; larger ones are not exact). Anything else is refused naming the field.
    /// An optional boolean field (absent: false).
    static func flag(_ body: Value, _ name: String) throws(EddyError) -> Bool {
        switch body[name] {
        case .null: return false
        case .bool(let flag): return flag
        case let other: throw EddyError(.invalidArgument, "field \"\(name)\" must be true or false, not \(JSONWriter.string(other))")
        }
    }

    static func requestID(_ value: Value, field: String, what: String) throws(EddyError) -> UInt64 {
        guard case .number(let n) = value, n >= 0, n <= 9_007_199_254_740_992, let id = UInt64(exactly: n) else {
            throw EddyError(
                .invalidArgument,
                "field \"\(field)\" must be \(what): a whole number from 0 to 9007199254740992, not \(JSONWriter.string(value))")
        }
        return id
    }

    static func path(_ body: Value) throws(EddyError) -> Path {
        try Path(try self.string(body, "path", optional: false)!)
    }

    /// `"query": {"orderBy": "\"s\"", "limitToFirst": "2"}` with the REST parameter texts.
    private static func query(_ body: Value) throws(EddyError) -> Query? {
        guard case .object(let parameters) = body["query"] else {
            if body["query"].isNull { return nil }
            throw EddyError(.invalidArgument, "field \"query\" must be an object of REST query parameters, not \(JSONWriter.string(body["query"]))")
        }
        var builder = QueryParameters()
        for (name, value) in parameters {
            guard QueryParameters.names.contains(name) else {
                throw EddyError(.invalidArgument, "query parameter \(name) is not one of \(QueryParameters.names.sorted().joined(separator: ", "))")
            }
            guard case .string(let text) = value else {
                throw EddyError(
                    .invalidArgument, "query parameter \(name) must be its REST text (e.g. \"\\\"age\\\"\"), not \(JSONWriter.string(value))")
            }
            try builder.add(name, text)
        }
        return try builder.build()
    }
}
