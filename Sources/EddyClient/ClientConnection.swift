// One native-protocol connection of a `Database` to eddyd, over a Unix socket or TCP
// (SwiftNIO). Requests are framed in the order they are made and written on one channel, so
// they reach the server in that order (its writes commit in that order); answers and events
// are routed by request id. It connects on the first request.
//
// Writes outlive the connection, as in Firebase: a write not yet answered when the connection
// goes is kept and sent again, in order, before anything else once the connection is back
// (the connection retries with backoff, 100 ms doubling to 5 s, while writes wait). A write
// the server had applied before the connection went is applied again: sets, updates and
// removes are idempotent, a `ServerValue.increment` is not (Firebase's clients do the same).
// A conditional write (a transaction's, with `ifMatch`) is the exception: one the lost connection
// had sent fails with `disconnected`, as Firebase fails a sent transaction, because applied before
// the loss it would come back stale and the transaction would run again on its own result.
// onDisconnect registrations and cancels are kept the same way (one the old connection took
// has run when it ended; sent again, it registers on the new one). Every other request
// waiting for an answer fails with `disconnected`, and every subscription is told it ended
// (`onEnd`), so the layer above subscribes again from its last log id. Offline (`goOffline`),
// nothing connects: writes, onDisconnect requests and subscriptions wait, reads fail at once.
//
// Several endpoints (a cluster's nodes: `eddy://a:1,b:2`): it connects to one at a time. A
// connection that cannot be made moves on to the next endpoint; so does a write the node refuses
// as `notLeader` (a follower, or a leader that lost its lease): the write is kept, the connection
// is closed, and the writes are sent again, in order, to the next endpoint. With one endpoint a
// `notLeader` refusal fails the write, as before.
//
// Bounds: at most `writesWaitingMax` unanswered writes or `writesWaitingBytesMax` bytes of
// them (one write is always admitted); a write past that fails with `writeCanceled`.
//
// Every connection of the process runs on one event loop (`eventLoop`), so requests go out in
// the order they are made across connections, as Firebase's clients run the work of every
// database instance on one queue: a listen made on one instance before a write on another is
// written to its socket first (on two loops the write could go first whenever the listen's loop
// was busy, and eddyd then applied it before the listen: the listen's first value held it
// instead of an event).
//
// Frames are handled in the order read, on the event loop while that is quick, else on the
// connection's own serial queue (`inbox`), so that a connection with a lot to do never stalls
// the other connections of the process, which share the event loop: a large frame
// (`inlineBytesMax` or more: a debug build parses a 16 MiB value in about 10 s) goes to the
// queue, and so does every frame of a connection for `queuedSeconds` after one took longer
// than `inlineMillisecondsMax` to handle (a burst of writes under an observer makes each of its
// answers and events walk the writes still waiting), and every frame read while earlier ones
// wait there. Otherwise a frame is handled on the loop at once (a hop to the queue and back
// for every frame cost a round trip 18%). Bounded: while `inboxBytesMax` bytes of frames wait
// on the queue, the channel reads no more (TCP then holds eddyd back, which ends a subscriber
// that stays behind, as for any slow reader). The end of a channel is handled after its frames;
// a frame of a channel that is no longer the connection's (gone offline, replaced) is dropped.
//
// Thread-safety: all state sits behind one mutex; NIO handlers run on the channel's event loop
// and must not block.

import Dispatch
import EddyModel
import EddyProtocol
import NIOCore
import NIOPosix
import Synchronization

final class ClientConnection: Transport {
    enum Endpoint: Sendable, Equatable, CustomStringConvertible {
        case unix(path: String)
        case tcp(host: String, port: Int)

        var description: String {
            switch self {
            case .unix(let path): return "eddy+unix://\(path)"
            case .tcp(let host, let port): return "eddy://\(host):\(port)"
            }
        }
    }

    static let writesWaitingMax = 100_000
    static let writesWaitingBytesMax = 256 << 20
    /// How long a read waits for a connection after losing one (Firebase's iOS SDK fails a get
    /// that finds no connection after 3 s, `kPersistentConnectionGetConnectTimeout`).
    static let readWaitSeconds = 3

    typealias Answer = @Sendable (Result<(kind: Frame.Kind, payload: Value), DatabaseError>) -> Void

    struct Subscription: Sendable {
        /// Every frame with the subscription's id (`subscribed`, `events`, `behind`, `error`).
        let onFrame: @Sendable (Frame.Kind, Value) -> Void
        /// The connection went away (or the server ended the subscription).
        let onEnd: @Sendable (DatabaseError) -> Void
    }

    private enum Phase {
        case idle
        case connecting
        case connected(any Channel)
    }

    private struct State {
        var phase = Phase.idle
        var offline = false
        var nextRequestID: UInt64 = 1
        var answers: [UInt64: Answer] = [:]
        /// Unanswered writes, sent again after a reconnect.
        var writes: [UInt64: Frame] = [:]
        /// The writes of `writes` that carry an `ifMatch` (transactions'): one the lost
        /// connection had sent fails with `disconnected` instead of going again, as Firebase
        /// fails a sent transaction: applied before the loss, it would come back stale and the
        /// transaction would run its block again on its own result.
        var conditionalWrites: Set<UInt64> = []
        var writesBytes = 0
        /// Unanswered reads (`get`, `query`). When the connection drops (or cannot be made), a
        /// read waits for the next one and is sent again there, as Firebase's JS SDK restores
        /// its outstanding gets, for `readWaitSeconds` after its first loss (`readsLostAt`);
        /// then, or at once after `goOffline`, it fails with `disconnected` (and answers from a
        /// live view's copy when there is one).
        var reads: [UInt64: Frame] = [:]
        var readsLostAt: [UInt64: ContinuousClock.Instant] = [:]
        var subscriptions: [UInt64: Subscription] = [:]
        /// Frames made while not connected, sent in order once connected.
        var waiting: [Frame] = []
        var retryMilliseconds = 100
        var retryScheduled = false
        var onState: (@Sendable (Bool) -> Void)?
        /// Sent in an `auth` request first on every connection.
        var authToken: String?
        /// Which of `endpoints` connects next (or is connected).
        var endpointIndex = 0
        /// The connection is being left for the next endpoint (a write was refused `notLeader`).
        var leaving = false
    }

    /// Bytes of frames read but not handled yet past which the channel stops reading.
    static let inboxBytesMax = 16 << 20
    /// Frames with a payload this large or larger are handled on `inbox`, off the event loop.
    static let inlineBytesMax = 64 << 10
    /// A frame that took longer than this to handle sends the connection's frames to `inbox`
    /// for `queuedSeconds`.
    static let inlineMillisecondsMax: Int64 = 1
    static let queuedSeconds: Int64 = 1
    /// The event loop of every connection of the process (see the top).
    static let eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()

    let endpoints: [Endpoint]
    let namespace: String?
    private let state = Mutex(State())
    /// Where frames and the channel's end are handled, in order (see the top).
    private let inbox = DispatchQueue(label: "eddy.client.connection")

    /// `namespace`: sent as `ns` with every request and subscription (nil: the server's
    /// default namespace), from a native URL's `?ns=NAME`.
    init(endpoints: [Endpoint], namespace: String? = nil) {
        precondition(!endpoints.isEmpty, "a connection needs an endpoint")
        self.endpoints = endpoints
        self.namespace = namespace
    }

    convenience init(endpoint: Endpoint) {
        self.init(endpoints: [endpoint])
    }

    /// The endpoint connected (or connecting next).
    var endpoint: Endpoint { self.endpoints[self.state.withLock { $0.endpointIndex }] }

    /// Called with true when the connection is made (on the event loop) and false when it goes
    /// (where the loss is handled: the connection's queue, or `goOffline`'s caller).
    func onStateChange(_ handler: @escaping @Sendable (Bool) -> Void) {
        self.state.withLock { $0.onState = handler }
    }

    /// Keeps the credential for every later connection and sends it now when connected.
    /// eddyd then ends the connection's subscriptions (`authRevoked`); each view subscribes
    /// again as the new identity and resumes from its last log id (see `received`).
    func setAuthToken(_ token: String?) {
        let connected = self.state.withLock { state -> Bool in
            state.authToken = token
            if case .connected = state.phase { return true }
            return false
        }
        if connected { self.request(.auth, .object(["token": token.map { .string($0) } ?? .null])) { _ in } }
    }

    var isConnected: Bool {
        self.state.withLock { state in
            if case .connected = state.phase { return true }
            return false
        }
    }

    /// The payload with this connection's namespace (a connection-level `auth` has none).
    private func inNamespace(_ payload: Value, _ kind: Frame.Kind) -> Value {
        guard let namespace = self.namespace, kind != .auth, case .object(var members) = payload else { return payload }
        members["ns"] = .string(namespace)
        return .object(members)
    }

    /// Sends a request; `answer` gets its answer frame (an `error` frame as a failure).
    func request(_ kind: Frame.Kind, _ payload: Value, answer: @escaping Answer) {
        let bytes = JSONWriter.bytes(self.inNamespace(payload, kind))
        // eddyd closes a connection that sends a longer frame: refused here, with nothing sent,
        // or the write would be sent again on every new connection.
        guard Frame.headerBytes + bytes.count <= Frame.bytesMax else {
            answer(
                .failure(
                    DatabaseError(
                        .invalidValue,
                        "the request is \(bytes.count) bytes; one sent to eddyd may hold at most \(Frame.bytesMax - Frame.headerBytes) (16 MiB, Firebase's limit for a write from its SDKs): write less at once, or over REST (256 MB)"
                    )))
            return
        }
        // Writes and onDisconnect requests wait for the connection and are sent again on a new
        // one until answered, as Firebase queues both; reads wait a while (`State.reads`); all
        // but writes fail while offline.
        let kept = kind == .write || kind == .onDisconnect || kind == .cancelDisconnect
        if kept {
            let refused = self.state.withLock { state -> Bool in
                !state.writes.isEmpty
                    && (state.writes.count >= Self.writesWaitingMax || state.writesBytes + bytes.count > Self.writesWaitingBytesMax)
            }
            if refused {
                answer(
                    .failure(
                        DatabaseError(
                            .writeCanceled,
                            "\(Self.writesWaitingMax) writes or \(Self.writesWaitingBytesMax >> 20) MiB of writes already wait for eddyd at \(self.endpoint); the write was not sent")))
                return
            }
        } else if kind != .subscribe, self.state.withLock({ $0.offline }) {
            answer(.failure(DatabaseError(.disconnected, "the client is offline (goOffline); reads need the connection to eddyd")))
            return
        }
        // (`Value`'s subscript answers .null for a missing member, never nil.)
        var conditional = false
        if kind == .write, case .string = payload["ifMatch"] { conditional = true }
        let read = kind == .get || kind == .query
        self.send(kind, bytes) { state, id, frame in
            state.answers[id] = answer
            if read { state.reads[id] = frame }
            if kept {
                state.writes[id] = frame
                state.writesBytes += frame.payload.count
                if conditional { state.conditionalWrites.insert(id) }
            }
        }
    }

    /// Sends a `subscribe`; returns its id (for `unsubscribe`).
    @discardableResult
    func subscribe(_ payload: Value, _ subscription: Subscription) -> UInt64 {
        self.send(.subscribe, JSONWriter.bytes(self.inNamespace(payload, .subscribe))) { state, id, _ in state.subscriptions[id] = subscription }
    }

    /// Ends a subscription here at once and tells the server.
    func unsubscribe(_ id: UInt64) {
        let known = self.state.withLock { $0.subscriptions.removeValue(forKey: id) != nil }
        guard known, self.isConnected else { return }
        self.send(.unsubscribe, JSONWriter.bytes(.object(["subscription": .number(Double(id))]))) { state, unsubscribeID, _ in
            state.answers[unsubscribeID] = { _ in }
        }
    }

    /// Goes offline (`goOffline`): at once, as Firebase does, so a write made right after waits
    /// (the connection is taken as lost now: reads fail, subscriptions end and are made again
    /// online, `.info/connected` turns false), then closes the connection and connects no more
    /// until `goOnline`.
    func goOffline() {
        let channel = self.state.withLock { state -> (any Channel)? in
            state.offline = true
            if case .connected(let channel) = state.phase { return channel }
            return nil
        }
        guard let channel else { return }
        self.lost(DatabaseError(.disconnected, "the client went offline (goOffline)"), from: channel)
        channel.close(promise: nil)
    }

    func open() {
        let connect = self.state.withLock { state -> Bool in
            guard !state.offline, case .idle = state.phase, !state.retryScheduled else { return false }
            state.phase = .connecting
            return true
        }
        if connect { self.connect() }
    }

    /// Comes back online: connects again (so `.info/connected` turns true even when nothing
    /// waits to be sent, as Firebase's `goOnline` resumes the connection).
    func goOnline() {
        let connect = self.state.withLock { state -> Bool in
            guard state.offline else { return false }
            state.offline = false
            state.retryMilliseconds = 100
            guard case .idle = state.phase, !state.retryScheduled else { return false }
            state.phase = .connecting
            return true
        }
        if connect { self.connect() }
    }

    /// Fails every write not yet sent with `writeCanceled` (`purgeOutstandingWrites`).
    func purgeWaitingWrites() {
        let canceled = self.state.withLock { state -> [Answer] in
            guard case .connected = state.phase else {
                // Writes and onDisconnect requests, as Firebase's purge cancels both.
                let purged: Set<Frame.Kind> = [.write, .onDisconnect, .cancelDisconnect]
                let ids = state.waiting.filter { purged.contains($0.kind) }.map(\.requestID)
                state.waiting.removeAll { purged.contains($0.kind) }
                var canceled: [Answer] = []
                for id in ids {
                    if let answer = state.answers.removeValue(forKey: id) { canceled.append(answer) }
                    if let frame = state.writes.removeValue(forKey: id) { state.writesBytes -= frame.payload.count }
                    state.conditionalWrites.remove(id)
                }
                return canceled
            }
            return []
        }
        for answer in canceled { answer(.failure(DatabaseError(.writeCanceled, "the write was canceled by purgeOutstandingWrites()"))) }
    }

    @discardableResult
    private func send(_ kind: Frame.Kind, _ bytes: [UInt8], register: (inout State, UInt64, Frame) -> Void) -> UInt64 {
        var connect = false
        let id = self.state.withLock { state -> UInt64 in
            let id = state.nextRequestID
            state.nextRequestID += 1
            let frame = Frame(kind: kind, requestID: id, payload: bytes)
            register(&state, id, frame)
            switch state.phase {
            case .connected(let channel):
                Self.enqueue([frame], on: channel)
            case .connecting:
                state.waiting.append(frame)
            case .idle:
                state.waiting.append(frame)
                if !state.offline && !state.retryScheduled {
                    state.phase = .connecting
                    connect = true
                }
            }
            return id
        }
        if connect { self.connect() }
        return id
    }

    private func connect() {
        let bootstrap = ClientBootstrap(group: Self.eventLoop)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ClientFrameHandler(connection: self))
                }
            }
        let future: EventLoopFuture<any Channel>
        let endpoint = self.endpoint
        switch endpoint {
        case .unix(let path): future = bootstrap.connect(unixDomainSocketPath: path)
        case .tcp(let host, let port): future = bootstrap.connect(host: host, port: port)
        }
        future.whenComplete { result in
            switch result {
            case .success(let channel):
                if case .tcp = endpoint { _ = channel.setOption(.socketOption(.tcp_nodelay), value: 1) }
                let (offline, onState) = self.state.withLock { state -> (Bool, (@Sendable (Bool) -> Void)?) in
                    if state.offline {
                        state.phase = .idle  // goOnline connects again
                        return (true, nil)
                    }
                    state.phase = .connected(channel)
                    state.leaving = false
                    state.retryMilliseconds = 100
                    // The credential first: the server handles a connection's frames in order.
                    var frames: [Frame] = []
                    if let token = state.authToken {
                        let id = state.nextRequestID
                        state.nextRequestID += 1
                        frames.append(Frame(kind: .auth, requestID: id, payload: JSONWriter.bytes(.object(["token": .string(token)]))))
                        state.answers[id] = { _ in }
                    }
                    Self.enqueue(frames + state.waiting, on: channel)
                    state.waiting.removeAll()
                    return (false, state.onState)
                }
                if offline {
                    channel.close(promise: nil)
                } else {
                    onState?(true)
                }
            case .failure(let error):
                // The next attempt tries the next endpoint.
                self.state.withLock { $0.endpointIndex = ($0.endpointIndex + 1) % self.endpoints.count }
                self.lost(DatabaseError(.disconnected, "cannot connect to eddyd at \(endpoint): \(error)"), wasConnected: false)
            }
        }
    }

    /// The connection is gone (or never came): unanswered writes wait to be sent again, other
    /// requests fail, subscriptions end. With `channel`, only when it is the current connection
    /// (a connection already given up, by `goOffline`, reports its end late).
    func lost(_ error: DatabaseError, wasConnected: Bool = true, from channel: (any Channel)? = nil) {
        let (current, answers, subscriptions, retry, onState) = self.state.withLock {
            state -> (Bool, [Answer], [Subscription], Int?, (@Sendable (Bool) -> Void)?) in
            if let channel {
                guard case .connected(let current) = state.phase, current === channel else { return (false, [], [], nil, nil) }
            }
            let hadChannel: Bool
            if case .connected = state.phase { hadChannel = true } else { hadChannel = false }
            state.phase = .idle
            if hadChannel {
                // Every write the connection held went out on it (the waiting ones are written
                // when it connects); a conditional one is not sent again.
                for id in state.conditionalWrites {
                    guard let frame = state.writes.removeValue(forKey: id) else { continue }
                    state.writesBytes -= frame.payload.count
                }
                state.conditionalWrites.removeAll()
            }
            // Reads wait for the next connection, for a while (see `reads`).
            let now = ContinuousClock.now
            var carried: [UInt64: Frame] = [:]
            if !state.offline {
                for (id, frame) in state.reads {
                    let lostAt = state.readsLostAt[id] ?? now
                    guard now - lostAt < .seconds(Self.readWaitSeconds) else { continue }
                    carried[id] = frame
                    state.readsLostAt[id] = lostAt
                }
            }
            state.reads = carried
            state.readsLostAt = state.readsLostAt.filter { carried[$0.key] != nil }
            var failed: [Answer] = []
            for (id, answer) in state.answers where state.writes[id] == nil && carried[id] == nil { failed.append(answer) }
            state.answers = state.answers.filter { state.writes[$0.key] != nil || carried[$0.key] != nil }
            let subscriptions = Array(state.subscriptions.values)
            state.subscriptions.removeAll()
            state.waiting = state.writes.merging(carried) { write, _ in write }.sorted { $0.key < $1.key }.map(\.value)
            var retry: Int?
            if !state.waiting.isEmpty && !state.offline && !state.retryScheduled {
                retry = state.retryMilliseconds
                state.retryMilliseconds = min(5000, state.retryMilliseconds * 2)
                state.retryScheduled = true
            }
            return (true, failed, subscriptions, retry, wasConnected ? state.onState : nil)
        }
        guard current else { return }
        onState?(false)
        for answer in answers { answer(.failure(error)) }
        for subscription in subscriptions { subscription.onEnd(error) }
        if let retry {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(retry)) { [weak self] in self?.retry() }
        }
    }

    /// Writes `frames` to `channel` in a task of its event loop, called under the state lock:
    /// tasks run in the order enqueued, so frames go out in the order their requests took the
    /// lock; and never within the lock, where a write that fails at once (eddyd closed the
    /// connection) would report the channel's end, whose handler takes the lock again.
    private static func enqueue(_ frames: [Frame], on channel: any Channel) {
        guard !frames.isEmpty else { return }
        let buffers = frames.map { ByteBuffer(bytes: $0.encoded()) }
        channel.eventLoop.execute {
            for buffer in buffers { channel.write(buffer, promise: nil) }
            channel.flush()
        }
    }

    /// After the backoff: connects again if writes (or anything else) still wait.
    private func retry() {
        let connect = self.state.withLock { state -> Bool in
            state.retryScheduled = false
            guard case .idle = state.phase, !state.offline, !state.waiting.isEmpty else { return false }
            state.phase = .connecting
            return true
        }
        if connect { self.connect() }
    }

    /// Frames read off `channel`, handled on `inbox` in order; then `done` (on `inbox`), told
    /// whether one took longer than `inlineMillisecondsMax`.
    fileprivate func handOver(_ frames: [Frame], from channel: any Channel, done: @escaping @Sendable (_ slow: Bool) -> Void) {
        self.inbox.async {
            var slow = false
            for frame in frames {
                let start = NIODeadline.now()
                self.received(frame, from: channel)
                if NIODeadline.now() - start > .milliseconds(Self.inlineMillisecondsMax) { slow = true }
            }
            done(slow)
        }
    }

    /// `channel` ended: handled on `inbox`, after its frames.
    fileprivate func ended(_ channel: any Channel) {
        self.inbox.async {
            self.lost(DatabaseError(.disconnected, "the connection to eddyd at \(self.endpoint) was lost"), from: channel)
        }
    }

    /// A frame from the server, on `inbox` or the event loop (see the top). One of a channel
    /// the connection has left (or taken as lost) is dropped: its requests were failed or wait
    /// to be sent again.
    fileprivate func received(_ frame: Frame, from channel: any Channel) {
        let current = self.state.withLock { state -> Bool in
            guard case .connected(let connected) = state.phase else { return false }
            return connected === channel
        }
        guard current else { return }
        let payload: Value
        do {
            payload = frame.payload.isEmpty ? .null : try JSONParser.parse(frame.payload)
        } catch {
            payload = .object(["code": .string("invalidJSON"), "message": .string("the server sent a payload that is not JSON")])
        }
        enum Route {
            case subscription(Subscription)
            case answer(Answer)
            case leave(any Channel)
            case none
        }
        let redirectable = self.endpoints.count > 1 && frame.kind == .error && payload["code"] == .string("notLeader")
        let route = self.state.withLock { state -> Route in
            if redirectable, state.writes[frame.requestID] != nil {
                // Not the leader: the write stays and goes to the next endpoint. Later refusals
                // on this connection change nothing more.
                guard !state.leaving, case .connected(let channel) = state.phase else { return .none }
                state.leaving = true
                // This write and the ones sent after it were not applied here: a conditional
                // one among them may go again.
                state.conditionalWrites = state.conditionalWrites.filter { $0 < frame.requestID }
                state.endpointIndex = (state.endpointIndex + 1) % self.endpoints.count
                return .leave(channel)
            }
            if let subscription = state.subscriptions[frame.requestID] {
                if frame.kind == .error || frame.kind == .behind { state.subscriptions.removeValue(forKey: frame.requestID) }
                return .subscription(subscription)
            }
            if let answer = state.answers.removeValue(forKey: frame.requestID) {
                if let write = state.writes.removeValue(forKey: frame.requestID) { state.writesBytes -= write.payload.count }
                state.conditionalWrites.remove(frame.requestID)
                state.reads.removeValue(forKey: frame.requestID)
                state.readsLostAt.removeValue(forKey: frame.requestID)
                return .answer(answer)
            }
            return .none
        }
        switch route {
        case .subscription(let subscription):
            if frame.kind == .error, payload["code"] == .string("authRevoked") {
                // The identity changed or its token expired: subscribe again (as it is now).
                subscription.onEnd(DatabaseError(.disconnected, "the subscription's credential changed or expired"))
            } else {
                subscription.onFrame(frame.kind, payload)
            }
        case .leave(let channel):
            channel.close(promise: nil)
        case .answer(let answer):
            if frame.kind == .error {
                answer(.failure(Self.error(payload)))
            } else {
                answer(.success((frame.kind, payload)))
            }
        case .none:
            break
        }
    }

    static func error(_ payload: Value) -> DatabaseError {
        guard case .string(let code) = payload["code"] else { return DatabaseError(.unknownError, "the server sent an error without a code") }
        let message: String
        if case .string(let text) = payload["message"] { message = text } else { message = code }
        return DatabaseError(serverCode: code, message: message)
    }
}

/// Cuts the byte stream into frames for the connection: handled here while that is quick,
/// else on the connection's queue (see `ClientConnection`); holds reads back while
/// `ClientConnection.inboxBytesMax` bytes of them wait there. Confined to the event loop.
private final class ClientFrameHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer

    private let connection: ClientConnection
    private var decoder = FrameDecoder(lengthMax: Frame.fromServerBytesMax)
    /// Bytes handed to the connection's queue and not handled yet.
    private var waitingBytes = 0
    /// A read the channel asked for while too much waited: made once enough is handled.
    private var readHeldBack = false
    /// Until when frames go to the connection's queue (a frame was slow to handle).
    private var queuedUntil = NIODeadline.distantPast

    init(connection: ClientConnection) {
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = self.unwrapInboundIn(data)
        self.decoder.append(buffer.readableBytesView)
        var frames: [Frame] = []
        do {
            while let frame = try self.decoder.next() {
                if frames.isEmpty, self.waitingBytes == 0, frame.payload.count < ClientConnection.inlineBytesMax,
                    NIODeadline.now() >= self.queuedUntil
                {
                    let start = NIODeadline.now()
                    self.connection.received(frame, from: context.channel)
                    self.noteHandling(took: NIODeadline.now() - start)
                } else {
                    frames.append(frame)
                }
            }
        } catch {
            context.close(promise: nil)
        }
        guard !frames.isEmpty else { return }
        let bytes = frames.reduce(0) { $0 + Frame.headerBytes + $1.payload.count }
        self.waitingBytes += bytes
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        self.connection.handOver(frames, from: context.channel) { slow in
            bound.eventLoop.execute {
                if slow { bound.value.handler.queueForAWhile() }
                bound.value.handler.handled(bytes, context: bound.value.context)
            }
        }
    }

    /// A frame took `duration` to handle here: past `inlineMillisecondsMax`, `queueForAWhile`.
    private func noteHandling(took duration: TimeAmount) {
        if duration > .milliseconds(ClientConnection.inlineMillisecondsMax) { self.queueForAWhile() }
    }

    /// A frame was slow to handle: the next `queuedSeconds` of frames go to the connection's queue.
    private func queueForAWhile() {
        self.queuedUntil = NIODeadline.now() + .seconds(ClientConnection.queuedSeconds)
    }

    func read(context: ChannelHandlerContext) {
        guard self.waitingBytes < ClientConnection.inboxBytesMax else {
            self.readHeldBack = true
            return
        }
        context.read()
    }

    /// `bytes` of frames were handled: a read held back is made once less than half the bound
    /// waits.
    private func handled(_ bytes: Int, context: ChannelHandlerContext) {
        self.waitingBytes -= bytes
        guard self.readHeldBack, self.waitingBytes < ClientConnection.inboxBytesMax / 2 else { return }
        self.readHeldBack = false
        if context.channel.isActive { context.read() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.connection.ended(context.channel)
        context.fireChannelInactive()
    }
}
