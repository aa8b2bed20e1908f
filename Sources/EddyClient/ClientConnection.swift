// One native-protocol connection of a `Database` to eddyd, over a Unix socket or TCP
// (SwiftNIO). Requests are framed in the order they are made and written on one channel, so
// they reach the server in that order (its writes commit in that order); answers and events
// are routed by request id. It connects on the first request and again on the first request
// after it was lost. When the connection goes, every request waiting for an answer fails with
// `disconnected` and every subscription is told it ended (`onEnd`), so the layer above can
// subscribe again from its last log id.
//
// Thread-safety: all state sits behind one mutex; handlers are called on the channel's event
// loop and must not block.

import EddyModel
import EddyProtocol
import NIOCore
import NIOPosix
import Synchronization

final class ClientConnection: Sendable {
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
        var nextRequestID: UInt64 = 1
        var answers: [UInt64: Answer] = [:]
        var subscriptions: [UInt64: Subscription] = [:]
        /// Frames made while connecting, sent in order once connected.
        var waiting: [Frame] = []
    }

    let endpoint: Endpoint
    private let state = Mutex(State())

    init(endpoint: Endpoint) {
        self.endpoint = endpoint
    }

    /// Sends a request; `answer` gets its answer frame (an `error` frame as a failure).
    func request(_ kind: Frame.Kind, _ payload: Value, answer: @escaping Answer) {
        self.send(kind, payload) { state, id in state.answers[id] = answer }
    }

    /// Sends a `subscribe`; returns its id (for `unsubscribe`).
    @discardableResult
    func subscribe(_ payload: Value, _ subscription: Subscription) -> UInt64 {
        self.send(.subscribe, payload) { state, id in state.subscriptions[id] = subscription }
    }

    /// Ends a subscription here at once and tells the server.
    func unsubscribe(_ id: UInt64) {
        let known = self.state.withLock { $0.subscriptions.removeValue(forKey: id) != nil }
        guard known else { return }
        self.send(.unsubscribe, .object(["subscription": .number(Double(id))])) { state, unsubscribeID in
            state.answers[unsubscribeID] = { _ in }
        }
    }

    /// Closes the connection (`goOffline`): pending requests fail, subscriptions end.
    func close() {
        let channel = self.state.withLock { state -> (any Channel)? in
            if case .connected(let channel) = state.phase { return channel }
            return nil
        }
        channel?.close(promise: nil)
    }

    @discardableResult
    private func send(_ kind: Frame.Kind, _ payload: Value, register: (inout State, UInt64) -> Void) -> UInt64 {
        let bytes = JSONWriter.bytes(payload)
        var connect = false
        let id = self.state.withLock { state -> UInt64 in
            let id = state.nextRequestID
            state.nextRequestID += 1
            register(&state, id)
            let frame = Frame(kind: kind, requestID: id, payload: bytes)
            switch state.phase {
            case .connected(let channel):
                channel.writeAndFlush(ByteBuffer(bytes: frame.encoded()), promise: nil)
            case .connecting:
                state.waiting.append(frame)
            case .idle:
                state.waiting.append(frame)
                state.phase = .connecting
                connect = true
            }
            return id
        }
        if connect { self.connect() }
        return id
    }

    private func connect() {
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ClientFrameHandler(connection: self))
                }
            }
        let future: EventLoopFuture<any Channel>
        switch self.endpoint {
        case .unix(let path): future = bootstrap.connect(unixDomainSocketPath: path)
        case .tcp(let host, let port): future = bootstrap.connect(host: host, port: port)
        }
        future.whenComplete { result in
            switch result {
            case .success(let channel):
                if case .tcp = self.endpoint { _ = channel.setOption(.socketOption(.tcp_nodelay), value: 1) }
                self.state.withLock { state in
                    state.phase = .connected(channel)
                    for frame in state.waiting { channel.write(ByteBuffer(bytes: frame.encoded()), promise: nil) }
                    channel.flush()
                    state.waiting.removeAll()
                }
            case .failure(let error):
                self.lost(DatabaseError(.disconnected, "cannot connect to eddyd at \(self.endpoint): \(error)"))
            }
        }
    }

    /// The connection is gone (or never came): fail what waits, end the subscriptions.
    func lost(_ error: DatabaseError) {
        let (answers, subscriptions) = self.state.withLock { state -> ([Answer], [Subscription]) in
            state.phase = .idle
            state.waiting.removeAll()
            defer {
                state.answers.removeAll()
                state.subscriptions.removeAll()
            }
            return (Array(state.answers.values), Array(state.subscriptions.values))
        }
        for answer in answers { answer(.failure(error)) }
        for subscription in subscriptions { subscription.onEnd(error) }
    }

    /// A frame from the server, on the event loop.
    func received(_ frame: Frame) {
        let payload: Value
        do {
            payload = frame.payload.isEmpty ? .null : try JSONParser.parse(frame.payload)
        } catch {
            payload = .object(["code": .string("invalidJSON"), "message": .string("the server sent a payload that is not JSON")])
        }
        enum Route {
            case subscription(Subscription)
            case answer(Answer)
            case none
        }
        let route = self.state.withLock { state -> Route in
            if let subscription = state.subscriptions[frame.requestID] {
                if frame.kind == .error || frame.kind == .behind { state.subscriptions.removeValue(forKey: frame.requestID) }
                return .subscription(subscription)
            }
            if let answer = state.answers.removeValue(forKey: frame.requestID) { return .answer(answer) }
            return .none
        }
        switch route {
        case .subscription(let subscription):
            subscription.onFrame(frame.kind, payload)
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

/// Cuts the byte stream into frames for the connection.
private final class ClientFrameHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let connection: ClientConnection
    private var decoder = FrameDecoder()

    init(connection: ClientConnection) {
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = self.unwrapInboundIn(data)
        self.decoder.append(buffer.readableBytesView)
        do {
            while let frame = try self.decoder.next() { self.connection.received(frame) }
        } catch {
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.connection.lost(DatabaseError(.disconnected, "the connection to eddyd at \(self.connection.endpoint) was lost"))
        context.fireChannelInactive()
    }
}
