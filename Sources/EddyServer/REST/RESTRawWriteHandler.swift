// Small REST writes read and answered as bytes, ahead of NIO's HTTP codec and every handler
// behind it. It sits right after `RawBytesHandler` (the timeouts' raw companion) and takes a
// request that `RawWriteRequest` reads whole from the bytes and that the responder answers at
// once (`RESTResponder.beginWriteAtOnce`/`finishWriteAtOnce`: the same checks, write and answer
// as `RESTWriteAtOnceHandler`'s and the responder's); its answer is written as one buffer, as
// NIO's encoder would write it. Under 64 keep-alive clients of small POSTs, parsing into NIO's
// head, converting it to HTTPTypes, passing each part through the handlers behind the codec and
// encoding the answer back through them took about 30% of the event loops' time
// (Benchmarks/README.md, "small writes read raw").
//
// Invariants: only a connection's first requests are taken. The first that is not (a GET, a
// chunked body, anything `RawWriteRequest` or the responder does not take) goes on as bytes,
// with every byte after it, and from then on the handler passes everything: the codec behind
// it never sees a request that does not start at its first byte, and answers keep request
// order because a taken request's answer is out before any later byte goes on. One taken write
// is in flight at a time; bytes read meanwhile wait here (a read is held back once some wait,
// so at most two reads' worth). A request still incomplete when a read cycle ends goes on (the
// codec's timeouts and limits then apply to it). The timeouts' state sees a taken request as
// read at once and its answer as written (`HTTPTimeoutState`); a request pipelined behind a
// taken write waits here unread, so its head's timeout runs meanwhile (the codec would have read
// it at once). A graceful stop or the client's
// end of input, arriving while a taken write is in flight, waits for its answer.

import HTTPTypes
import NIOCore

final class RESTRawWriteHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let responder: RESTResponder
    private let serverName: String
    private let timeouts: HTTPTimeoutState
    /// False once a request went on to the codec: everything goes on after it.
    private var taking = true
    /// Bytes read and not yet taken (at most what two reads brought while a write is in flight).
    private var pending: ByteBuffer?
    private var inFlight = false
    private var readHeld = false
    /// A graceful stop's event and the client's end of input, held back while a taken write is
    /// in flight (Hummingbird, which never sees it, would close the connection before its answer).
    private var quiesceHeld = false
    private var inputEndHeld = false
    private var context: ChannelHandlerContext?

    init(responder: RESTResponder, serverName: String, timeouts: HTTPTimeoutState) {
        self.responder = responder
        self.serverName = serverName
        self.timeouts = timeouts
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        self.pending = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard self.taking else {
            context.fireChannelRead(data)
            return
        }
        var buffer = self.unwrapInboundIn(data)
        if self.pending == nil || self.pending!.readableBytes == 0 {
            self.pending = buffer
        } else {
            self.pending!.writeBuffer(&buffer)
        }
        if !self.inFlight { self.take(context: context) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // A request still incomplete at the end of a read cycle goes on to the codec.
        if self.taking, !self.inFlight, let pending = self.pending, pending.readableBytes > 0 { self.passOn(context: context) }
        context.fireChannelReadComplete()
    }

    /// Takes the complete requests at the front of `pending`, one at a time; passes everything
    /// on at the first that is not taken.
    private func take(context: ChannelHandlerContext) {
        while self.taking, !self.inFlight, let pending = self.pending, pending.readableBytes > 0 {
            switch RawWriteRequest.read(pending, bodyBytesMax: RESTResponder.writeAtOnceBytesMax) {
            case .incomplete:
                return
            case .notTaken:
                self.passOn(context: context)
                return
            case .complete(let head, let headBytes, let bodyBytes):
                guard let write = self.responder.beginWriteAtOnce(head) else {
                    self.passOn(context: context)
                    return
                }
                let body = pending.getSlice(at: pending.readerIndex + headBytes, length: bodyBytes)!
                self.inFlight = true
                let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
                let eventLoop = context.eventLoop
                let taken = self.responder.finishWriteAtOnce(write, head: head, body: body) { make in
                    eventLoop.execute { loopBound.value.written(make()) }
                }
                guard taken else {
                    // Given back (a body that does not parse, a full commit queue): the codec and
                    // the responder read it from its first byte.
                    self.inFlight = false
                    self.passOn(context: context)
                    return
                }
                ServerMetrics.restWriteReadRaw()
                self.pending!.moveReaderIndex(forwardBy: headBytes + bodyBytes)
                // Nothing kept of a buffer read whole (NIO may then reuse its storage).
                if self.pending!.readableBytes == 0 { self.pending = nil }
                self.timeouts.headRead()
                self.timeouts.requestRead()
            }
        }
    }

    /// From now on everything goes on to the codec, starting with what waits here.
    private func passOn(context: ChannelHandlerContext) {
        self.taking = false
        if let pending = self.pending, pending.readableBytes > 0 { context.fireChannelRead(self.wrapInboundOut(pending)) }
        self.pending = nil
    }

    /// On the event loop: writes a taken write's answer, then takes (or passes on) what waited.
    private func written(_ answer: RESTAnswer) {
        guard let context = self.context else { return }
        self.inFlight = false
        context.writeAndFlush(self.wrapOutboundOut(self.encode(answer, allocator: context.channel.allocator)), promise: nil)
        self.timeouts.answerWritten()
        if let pending = self.pending, pending.readableBytes > 0 {
            self.take(context: context)
            // Outside a read: what went on to the codec, or an incomplete request left here
            // (which goes on now, as at a read cycle's end), is read by the codec at its end.
            if self.taking, !self.inFlight, let pending = self.pending, pending.readableBytes > 0 { self.passOn(context: context) }
            if !self.taking { context.fireChannelReadComplete() }
        }
        if !self.inFlight, self.inputEndHeld {
            self.inputEndHeld = false
            self.userInboundEventTriggered(context: context, event: ChannelEvent.inputClosed)
        }
        if !self.inFlight, self.quiesceHeld {
            self.quiesceHeld = false
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
        if self.readHeld, !self.inFlight {
            self.readHeld = false
            context.read()
        }
    }

    /// The answer as NIO's encoder writes Hummingbird's: status line, the answer's fields, its
    /// length (0 without a body), date and server, then the body.
    private func encode(_ answer: RESTAnswer, allocator: ByteBufferAllocator) -> ByteBuffer {
        let headers = answer.headersAsSent(serverName: self.serverName)
        var buffer = allocator.buffer(capacity: 256 + (answer.body?.readableBytes ?? 0))
        buffer.writeStaticString("HTTP/1.1 ")
        buffer.writeString(String(answer.status.code))
        buffer.writeStaticString(" ")
        buffer.writeString(answer.status.reasonPhrase)
        buffer.writeStaticString("\r\n")
        for field in headers {
            buffer.writeString(field.name.rawName)
            buffer.writeStaticString(": ")
            buffer.writeString(field.value)
            buffer.writeStaticString("\r\n")
        }
        buffer.writeStaticString("\r\n")
        if var body = answer.body { buffer.writeBuffer(&body) }
        return buffer
    }

    /// Reads go on while a taken write is in flight until bytes arrive meanwhile (a client that
    /// pipelines): only then is the next read held back.
    func read(context: ChannelHandlerContext) {
        if self.inFlight, let pending = self.pending, pending.readableBytes > 0 {
            self.readHeld = true
            return
        }
        context.read()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        let isInputEnd = (event as? ChannelEvent) == .inputClosed
        if self.inFlight, isInputEnd || event is ChannelShouldQuiesceEvent {
            if isInputEnd { self.inputEndHeld = true } else { self.quiesceHeld = true }
            return
        }
        // What waits here (an incomplete request) goes on before the input's end does.
        if isInputEnd, self.taking, let pending = self.pending, pending.readableBytes > 0 {
            self.passOn(context: context)
            context.fireChannelReadComplete()
        }
        context.fireUserInboundEventTriggered(event)
    }
}
