// Event streams (`Content-Type: text/event-stream`) go out as Firebase's servers send them: an
// HTTP/1.1 answer with neither `Content-Length` nor `Transfer-Encoding`, whose body is the raw
// events and ends when the connection closes (RFC 9112 §6.3, the last case). With chunked
// framing, firebase-admin's `ListenerRegistration.close()` left its reader thread to fail with
// an `AttributeError` at the next keep-alive (urllib3 reads the next chunk from a response it
// has already closed); a close-delimited body reads as its end there instead.
//
// NIO's response encoder chunks every HTTP/1.1 body of unknown length and has no per-response
// switch, so the work takes two handlers on either side of it, sharing one `State`:
// - `Head` (above the encoder) gives a stream's head version 1.0, for which the encoder adds no
//   framing, adds `Connection: close`, and closes the connection once the stream's end is
//   written (a close-delimited body can only end that way; nothing can follow it).
// - `StatusLine` (below the encoder) puts `HTTP/1.1` back into the status line it wrote, so
//   only the framing differs from any other answer. It rewrites only the head `Head` marked.
// Invariant: a connection's answers after a stream are never read (the connection closes).
// Installed per connection by `EventStreamFraming()`, one of Hummingbird's additional handlers,
// which places the two around the encoder when it joins the pipeline.

import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// The installer: passes requests through unchanged (NIO takes only inbound or outbound
/// handlers); its work is done when it joins the pipeline.
final class EventStreamFraming: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    /// Shared by one connection's two handlers; touched on its event loop only.
    final class State {
        /// The next bytes the encoder writes are a stream's head, written as HTTP/1.0.
        var statusLineToRewrite = false
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let pipeline = context.pipeline.syncOperations
        guard let encoder = try? pipeline.handler(type: HTTPResponseEncoder.self) else { return }
        let state = State()
        do {
            try pipeline.addHandler(StatusLine(state: state), position: .before(encoder))
            try pipeline.addHandler(Head(state: state), position: .after(encoder))
        } catch {
            context.fireErrorCaught(error)
        }
    }

    /// Above the encoder: a stream's head goes out as HTTP/1.0 and its end closes the connection.
    final class Head: ChannelOutboundHandler, RemovableChannelHandler {
        typealias OutboundIn = HTTPServerResponsePart
        typealias OutboundOut = HTTPServerResponsePart

        private let state: State
        /// The answer being written is a stream: its end closes the connection.
        private var closesAtEnd = false

        init(state: State) {
            self.state = state
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            switch self.unwrapOutboundIn(data) {
            case .head(var head) where Self.isEventStream(head):
                self.closesAtEnd = true
                head.headers.replaceOrAdd(name: "Connection", value: "close")
                if head.version == .http1_1 {
                    head.version = .http1_0
                    self.state.statusLineToRewrite = true
                }
                context.write(self.wrapOutboundOut(.head(head)), promise: promise)
            case .end where self.closesAtEnd:
                self.closesAtEnd = false
                let written = context.eventLoop.makePromise(of: Void.self)
                let channel = context.channel
                written.futureResult.whenComplete { _ in channel.close(promise: nil) }
                written.futureResult.cascade(to: promise)
                context.write(data, promise: written)
            default:
                context.write(data, promise: promise)
            }
        }

        static func isEventStream(_ head: HTTPResponseHead) -> Bool {
            head.status == .ok
                && head.headers.first(name: "content-type").map { $0.lowercased().hasPrefix("text/event-stream") } == true
        }
    }

    /// Below the encoder: `HTTP/1.0` back to `HTTP/1.1` in the status line `Head` marked.
    final class StatusLine: ChannelOutboundHandler, RemovableChannelHandler {
        typealias OutboundIn = IOData
        typealias OutboundOut = IOData

        private let state: State
        private static let old = Array("HTTP/1.0 ".utf8)
        private static let new = Array("HTTP/1.1 ".utf8)

        init(state: State) {
            self.state = state
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            guard self.state.statusLineToRewrite, case .byteBuffer(var buffer) = self.unwrapOutboundIn(data) else {
                context.write(data, promise: promise)
                return
            }
            self.state.statusLineToRewrite = false
            if buffer.getBytes(at: buffer.readerIndex, length: Self.old.count) == Self.old {
                buffer.setBytes(Self.new, at: buffer.readerIndex)
            }
            context.write(self.wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
        }
    }
}
