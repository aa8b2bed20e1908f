// Answers small REST writes on the connection's event loop (`RESTResponder+WriteAtOnce`); every
// other request passes to Hummingbird's request task unchanged. It sits last among the HTTP
// handlers Eddy adds, after the codec, the timeouts and the 100-continue handler, before
// Hummingbird's connection state handler and channel, which never see a taken request.
//
// Invariants: answers go out in request order (HTTP/1.1 pipelining). A request is taken only
// when Hummingbird has answered every request handed to it (`unansweredByHummingbird`: heads
// passed on, less final answers it wrote, seen on their way out); one arriving while a taken
// write is in flight waits in `waiting` and follows its answer, and the connection reads no more
// once one has (its `read` is held back), so `waiting` holds at most what two reads brought. A
// request is taken or passed on at its head: a taken request's parts stay here (its body at most
// `RESTResponder.writeAtOnceBytesMax` bytes, reserved in the request bodies' budget), and one
// handed back after all (a body that does not parse) goes to Hummingbird whole, in order. A
// graceful stop (`ChannelShouldQuiesceEvent`) waits here while a taken write is in flight, and
// the client's end of input while a submitted one is, so the connection closes after its
// answer, not before.

import HTTPTypes
import NIOCore
import NIOHTTPTypes

final class RESTWriteAtOnceHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        /// Between requests.
        case idle
        /// Handing a request's parts to Hummingbird, up to its end.
        case passing
        /// Collecting a taken write's body.
        case collecting(HTTPRequest, RESTResponder.WriteAtOnce, ByteBuffer)
        /// A taken write is submitted; its answer has not been written yet.
        case answering
    }

    private let responder: RESTResponder
    /// The `Server` header Hummingbird adds to its answers.
    private let serverName: String
    private var state = State.idle
    /// Parts read while a taken write is in flight (at most what two reads of the socket
    /// brought: see `read(context:)`).
    private var waiting = CircularBuffer<HTTPRequestPart>()
    /// Requests handed to Hummingbird that it has not answered yet.
    private var unansweredByHummingbird = 0
    /// A `read` held back while a taken write is in flight.
    private var readHeld = false
    /// A graceful stop's event, and the client's end of input (a half-closing client), held back
    /// while a taken write is in flight: Hummingbird, which never sees that request, would close
    /// the connection before its answer.
    private var quiesceHeld = false
    private var inputEndHeld = false
    private var context: ChannelHandlerContext?

    init(responder: RESTResponder, serverName: String) {
        self.responder = responder
        self.serverName = serverName
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // The raw companion takes a connection's first small writes before the codec reads
        // them; it goes right after the timeouts' raw handler, whose state it keeps up to date.
        guard self.responder.answersWritesAtOnce,
            let raw = try? context.pipeline.syncOperations.handler(type: RawBytesHandler.self)
        else { return }
        let handler = RESTRawWriteHandler(responder: self.responder, serverName: self.serverName, timeouts: raw.state)
        try? context.pipeline.syncOperations.addHandler(handler, position: .after(raw))
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        if case .collecting(_, let write, _) = self.state { write.giveBack() }
        self.state = .passing
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.handle(self.unwrapInboundIn(data), context: context)
    }

    private func handle(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        switch self.state {
        case .idle:
            guard case .head(let head) = part, self.unansweredByHummingbird == 0, let write = self.responder.beginWriteAtOnce(head) else {
                self.state = part.isEnd ? .idle : .passing
                self.pass(part, context: context)
                return
            }
            var body = ByteBuffer()
            body.reserveCapacity(write.reservedBytes)
            self.state = .collecting(head, write, body)
        case .passing:
            if part.isEnd { self.state = .idle }
            self.pass(part, context: context)
        case .collecting(let head, let write, var body):
            switch part {
            case .head:
                // Cannot happen (the codec ends each request first); hand everything on.
                write.giveBack()
                self.handBack(head, body, then: part, context: context)
            case .body(let chunk):
                self.state = .idle  // (no copy of `body` while it grows)
                body.writeImmutableBuffer(chunk)
                self.state = .collecting(head, write, body)
            case .end(let trailers):
                self.state = .answering
                let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
                let eventLoop = context.eventLoop
                let taken = self.responder.finishWriteAtOnce(write, head: head, body: body) { make in
                    eventLoop.execute { loopBound.value.written(make()) }
                }
                // Not taken after all: `write` is given back already.
                if !taken { self.handBack(head, body, then: .end(trailers), context: context) }
            }
        case .answering:
            self.waiting.append(part)
        }
    }

    /// Hands a request that was taken (and given back) to Hummingbird as read so far, then `part`.
    private func handBack(_ head: HTTPRequest, _ body: ByteBuffer, then part: HTTPRequestPart, context: ChannelHandlerContext) {
        self.state = .passing
        self.pass(.head(head), context: context)
        if body.readableBytes > 0 { self.pass(.body(body), context: context) }
        self.handle(part, context: context)
        self.releaseHeldEvents(context: context)
    }

    /// Hands a part to Hummingbird, counting the requests it must answer.
    private func pass(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        if case .head = part { self.unansweredByHummingbird += 1 }
        context.fireChannelRead(self.wrapInboundOut(part))
    }

    /// Hummingbird's answers on their way out: a final answer's end answers a request handed to it.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = self.unwrapOutboundIn(data), self.unansweredByHummingbird > 0 { self.unansweredByHummingbird -= 1 }
        context.write(data, promise: promise)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if self.hasTaken, event is ChannelShouldQuiesceEvent {
            self.quiesceHeld = true
            return
        }
        // Only once the write is submitted: a body cut short by the input's end never completes.
        if self.isAnswering, (event as? ChannelEvent) == .inputClosed {
            self.inputEndHeld = true
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Passes the held events on once no taken write is left: Hummingbird closes the connection
    /// then, or after the answers it still owes.
    private func releaseHeldEvents(context: ChannelHandlerContext) {
        guard !self.hasTaken else { return }
        if self.inputEndHeld {
            self.inputEndHeld = false
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        }
        if self.quiesceHeld {
            self.quiesceHeld = false
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
    }

    /// A taken write is being read or answered.
    private var hasTaken: Bool {
        switch self.state {
        case .collecting, .answering: return true
        case .idle, .passing: return false
        }
    }

    private var isAnswering: Bool {
        if case .answering = self.state { return true }
        return false
    }

    /// Reads go on while a taken write is in flight until a part arrives meanwhile (a client
    /// that pipelines): only then is the next read held back, so `waiting` holds at most two
    /// reads' worth, and a client that waits for each answer costs no change of the socket's
    /// interest per request.
    func read(context: ChannelHandlerContext) {
        if self.isAnswering, !self.waiting.isEmpty {
            self.readHeld = true
            return
        }
        context.read()
    }

    /// On the event loop: writes a taken write's answer, then reads what waited for it.
    private func written(_ answer: RESTAnswer) {
        guard let context = self.context else { return }
        let headers = answer.headersAsSent(serverName: self.serverName)
        context.write(self.wrapOutboundOut(.head(HTTPResponse(status: answer.status, headerFields: headers))), promise: nil)
        if let body = answer.body { context.write(self.wrapOutboundOut(.body(body)), promise: nil) }
        context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
        self.state = .idle
        if !self.waiting.isEmpty {
            while !self.isAnswering, let part = self.waiting.popFirst() {
                self.handle(part, context: context)
            }
            // Outside a read: Hummingbird's channel takes what was read at the read's end.
            context.fireChannelReadComplete()
        }
        // Parts left waiting belong to a write taken meanwhile; they follow its answer.
        self.releaseHeldEvents(context: context)
        if self.readHeld, !self.isAnswering {
            self.readHeld = false
            context.read()
        }
    }
}

extension HTTPRequestPart {
    fileprivate var isEnd: Bool {
        if case .end = self { return true }
        return false
    }
}
