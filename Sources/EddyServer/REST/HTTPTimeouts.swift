// Deadlines for slow or broken HTTP clients, so a few thousand of them cannot hold the server:
//
// - header: from the first byte of a request, its head must be complete within
//   `headerSeconds` (a client trickling headers, slowloris);
// - body: while a request's body is owed, some of it must arrive every `bodySeconds` (a body
//   shorter than its Content-Length, a stalled upload);
// - idle: a connection with no request in progress and none being answered closes after
//   `idleSeconds` (keep-alive connections nobody uses).
// A header or body timeout answers `408 Request Timeout` with a Firebase error body naming the
// option, then closes; an idle connection just closes. A head the HTTP parser refuses (see
// `HTTPHeadRefusal`) is answered the same way, with a body saying what was wrong, and then
// lingers: the output is closed and what the client still sends is read and dropped until it
// closes its side, `checkSeconds` pass or `lingerBytesMax` arrive, since closing a socket with
// unread input resets the connection, and the reset can discard the answer before the client
// reads it. A response in progress (an SSE stream, a large GET) is never timed out.
//
// Two handlers share one `HTTPTimeoutState`: `RawBytesHandler` at the front of the pipeline
// sees bytes (so a half-sent head is visible, and the 408 is written as raw bytes, whatever
// state the HTTP codec is in), and `HTTPTimeoutHandler` after Hummingbird's codec sees request
// and response parts. Both run on the channel's event loop, which is the only place the state
// is touched.
//
// Timers: a request moves the deadline three or four times (head, body, read, answered). The
// deadline is a plain value; one scheduled check per connection runs at the deadline or
// `checkSeconds` (the shortest of the three timeouts) after it was scheduled, whichever is
// first, and schedules the next check while the deadline lies ahead. A new deadline is never
// earlier than the pending check (every timeout is at least `checkSeconds`), so moving it
// costs no timer: scheduling and cancelling one per move took a sixth of an event loop's time
// under small keep-alive POSTs. Invariant: while `deadline` is set, a check is scheduled at or
// before it.

import EddyModel
import HTTPTypes
import HummingbirdCore
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

public struct HTTPTimeouts: Sendable {
    public var headerSeconds: Int
    public var bodySeconds: Int
    public var idleSeconds: Int

    public init(headerSeconds: Int = 10, bodySeconds: Int = 30, idleSeconds: Int = 120) {
        self.headerSeconds = headerSeconds
        self.bodySeconds = bodySeconds
        self.idleSeconds = idleSeconds
    }

    /// The handlers for one connection (`HTTP1Channel.Configuration.additionalChannelHandlers`).
    func handlers() -> [any RemovableChannelHandler] {
        [HTTPTimeoutHandler(state: HTTPTimeoutState(self))]
    }
}

/// Event-loop bound: only the two handlers of one channel use it.
final class HTTPTimeoutState {
    enum Reading { case idle, head, body }

    let timeouts: HTTPTimeouts
    /// The longest a check waits: the shortest timeout.
    let checkSeconds: Int64
    var reading = Reading.idle
    /// Requests read whole and not answered whole yet.
    var answersOwed = 0
    /// When the current state times out; nil when nothing is timed (an answer in progress).
    var deadline: NIODeadline?
    /// The pending check, if any.
    var check: Scheduled<Void>?
    /// Where the 408 is written from: the front of the pipeline.
    var rawContext: ChannelHandlerContext?
    /// A head the parser refused, answered once the answers before it are out.
    var refusedHead: HTTPHeadRefusal?
    /// After a refused head's answer: output closed, arriving bytes dropped (see the top).
    private(set) var lingering = false
    /// Bytes dropped while lingering.
    private var lingerBytes = 0
    /// Dropped bytes after which a lingering connection closes anyway: a client still sending
    /// more than this has not read the answer either, and reading on only costs the server.
    static let lingerBytesMax = 1 << 20

    init(_ timeouts: HTTPTimeouts) {
        self.timeouts = timeouts
        self.checkSeconds = Int64(max(1, min(timeouts.headerSeconds, timeouts.bodySeconds, timeouts.idleSeconds)))
    }

    func bytesArrived() {
        switch self.reading {
        case .idle:
            self.reading = .head
            self.arm(seconds: self.timeouts.headerSeconds)
        case .head:
            break  // the deadline runs from the first byte
        case .body:
            self.arm(seconds: self.timeouts.bodySeconds)
        }
    }

    func headRead() {
        self.reading = .body
        self.arm(seconds: self.timeouts.bodySeconds)
    }

    /// A request was read whole. Its answer may already be out (an error answered before the
    /// body was read): then nothing is owed and the connection is idle.
    func requestRead() {
        self.reading = .idle
        self.answersOwed += 1
        if self.answersOwed <= 0 { self.arm(seconds: self.timeouts.idleSeconds) } else { self.disarm() }
    }

    /// An answer was written whole (possibly before its request's body was read: `answersOwed`
    /// is then briefly negative, and the body timer keeps running).
    func answerWritten() {
        self.answersOwed -= 1
        if self.refusedHead != nil {
            if self.answersOwed <= 0 { self.writeRefusedHead() }
            return
        }
        if self.reading == .idle, self.answersOwed <= 0 { self.arm(seconds: self.timeouts.idleSeconds) }
    }

    func connectionStarted() {
        self.arm(seconds: self.timeouts.idleSeconds)
    }

    /// Nothing is timed now (the pending check finds no deadline and ends).
    func disarm() {
        self.deadline = nil
    }

    /// The connection is going: the pending check is cancelled.
    func stop() {
        self.deadline = nil
        self.check?.cancel()
        self.check = nil
    }

    private func arm(seconds: Int) {
        let now = NIODeadline.now()
        self.deadline = now + .seconds(Int64(seconds))
        if self.check == nil { self.scheduleCheck(now: now) }
    }

    /// Schedules the next check at the deadline or `checkSeconds` from now, whichever is first.
    private func scheduleCheck(now: NIODeadline) {
        guard let context = self.rawContext, let deadline = self.deadline else { return }
        let at = min(deadline, now + .seconds(self.checkSeconds))
        self.check = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(deadline: at) {
            self.check = nil
            guard let deadline = self.deadline else { return }
            let now = NIODeadline.now()
            if now < deadline {
                self.scheduleCheck(now: now)
            } else {
                self.deadline = nil
                self.fired()
            }
        }
    }

    /// A request head the HTTP parser refused (too large, a method or version it does not know,
    /// broken framing): answered here with a Firebase error body naming what was wrong, then
    /// the connection closes; after the answers still owed (pipelined requests before it), so
    /// its bytes never land inside one. False (the error goes on: the responder answers it)
    /// when a body was being read.
    func answerRefusedHead(_ error: HTTPParserError) -> Bool {
        if self.refusedHead != nil { return true }  // already refused: the answer says it
        guard self.rawContext != nil, self.reading != .body else { return false }
        self.refusedHead = HTTPHeadRefusal(error)
        self.reading = .idle
        self.deadline = nil
        if self.answersOwed <= 0 { self.writeRefusedHead() }
        return true
    }

    private func writeRefusedHead() {
        guard let context = self.rawContext, let refusal = self.refusedHead else { return }
        self.answersOwed = 0
        self.writeRaw(status: refusal.status, reason: refusal.reasonPhrase, message: refusal.message, context: context, linger: true)
    }

    /// The refused head's answer is out: closes the output (the client reads the answer, then
    /// the end) and drops what arrives until the input ends, `checkSeconds` pass or
    /// `lingerBytesMax` arrive. A channel that cannot close only its output closes whole.
    private func linger(_ context: ChannelHandlerContext) {
        self.lingering = true
        self.reading = .idle
        let closed = context.eventLoop.makePromise(of: Void.self)
        closed.futureResult.assumeIsolated().whenFailure { _ in context.close(promise: nil) }
        context.close(mode: .output, promise: closed)
        self.arm(seconds: Int(self.checkSeconds))
    }

    /// Bytes that arrived while lingering, dropped.
    func droppedWhileLingering(_ count: Int) {
        self.lingerBytes += count
        if self.lingerBytes > Self.lingerBytesMax { self.rawContext?.close(promise: nil) }
    }

    private func fired() {
        guard let context = self.rawContext else { return }
        if self.lingering {
            context.close(promise: nil)
            return
        }
        let reason: String
        switch self.reading {
        case .idle:
            if self.answersOwed > 0 { return }  // answering: never timed out
            context.close(promise: nil)
            return
        case .head:
            reason = "the request head was not complete within \(self.timeouts.headerSeconds) s (--http-header-timeout-seconds)"
        case .body:
            reason = "the request body stalled: no bytes for \(self.timeouts.bodySeconds) s (--http-body-timeout-seconds)"
        }
        // A handler reading the stalled body learns why it ended (its answer is the 408 below,
        // and `--log-requests` logs that, not a malformed body).
        if self.reading == .body { context.fireErrorCaught(HTTPRequestTimedOut(reason: reason)) }
        self.reading = .idle
        self.answersOwed = 0
        self.writeRaw(status: 408, reason: "Request Timeout", message: "request timed out: \(reason)", context: context)
    }

    /// Writes a whole answer as bytes at the front of the pipeline (whatever state the HTTP
    /// codec is in), `{"error": message}`, then closes the connection, or with `linger` only its
    /// output (see `linger`).
    private func writeRaw(status: Int, reason: String, message: String, context: ChannelHandlerContext, linger: Bool = false) {
        let body = JSONWriter.bytes(.object(["error": .string(message)]))
        let head =
            "HTTP/1.1 \(status) \(reason)\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: \(body.count)\r\nconnection: close\r\n\r\n"
        var buffer = context.channel.allocator.buffer(capacity: head.utf8.count + body.count)
        buffer.writeString(head)
        buffer.writeBytes(body)
        context.writeAndFlush(NIOAny(buffer)).assumeIsolated().whenComplete { result in
            if linger, case .success = result, context.channel.isActive {
                self.linger(context)
            } else {
                context.close(promise: nil)
            }
        }
    }
}

/// The request's body stopped arriving: the connection answered 408 and closes.
struct HTTPRequestTimedOut: Error, CustomStringConvertible {
    let reason: String
    var description: String { "request timed out: \(self.reason)" }
}

/// At the front of the pipeline: notes every arrival of bytes, and writes the 408.
final class RawBytesHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    let state: HTTPTimeoutState

    init(state: HTTPTimeoutState) {
        self.state = state
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.state.rawContext = context
        if context.channel.isActive { self.state.connectionStarted() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.state.stop()
        self.state.rawContext = nil
    }

    /// A connection whose handlers were added before it became active (the usual case): its
    /// idle timer starts here, so a client that connects and never sends a byte is closed too.
    func channelActive(context: ChannelHandlerContext) {
        self.state.connectionStarted()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if self.state.lingering {
            self.state.droppedWhileLingering(self.unwrapInboundIn(data).readableBytes)
            return
        }
        self.state.bytesArrived()
        context.fireChannelRead(data)
    }

    /// The client ended its side: a lingering connection is done (its answer was read).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if self.state.lingering, case ChannelEvent.inputClosed? = event as? ChannelEvent {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.state.stop()
        context.fireChannelInactive()
    }
}

/// After Hummingbird's HTTP codec: follows requests and answers.
final class HTTPTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart
    let state: HTTPTimeoutState

    init(state: HTTPTimeoutState) {
        self.state = state
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // The raw companion goes before the HTTP codec, to see bytes as they come: after the
        // TLS handler and after `ProtocolSniffer`, which passes the first bytes on from its place.
        let raw = RawBytesHandler(state: self.state)
        if let encoder = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self) {
            try? context.pipeline.syncOperations.addHandler(raw, position: .before(encoder.handler))
        } else {
            try? context.pipeline.syncOperations.addHandler(raw, position: .first)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head: self.state.headRead()
        case .body: break
        case .end: self.state.requestRead()
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let refused = error as? HTTPParserError, self.state.answerRefusedHead(refused) { return }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let isEnd: Bool
        if case .end = self.unwrapOutboundIn(data) { isEnd = true } else { isEnd = false }
        context.write(data, promise: promise)
        // After the answer's last bytes: a refused head's answer written now follows them.
        if isEnd { self.state.answerWritten() }
    }
}
