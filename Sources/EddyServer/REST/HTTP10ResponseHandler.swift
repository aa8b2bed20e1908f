// Answers an HTTP/1.0 request as HTTP/1.0. Hummingbird's codec writes every response head as
// HTTP/1.1, so a streamed answer (an event stream, a GET over `streamFirstChunkBytes`) went out
// chunked to a client that cannot read chunks: RFC 9112 §6.1, "A server MUST NOT send a
// response containing Transfer-Encoding unless the corresponding request indicates HTTP/1.1 (or
// later)". For an HTTP/1.0 request the head says HTTP/1.0 and `Connection: close`, NIO's encoder
// then writes the body as it is, and the connection closes after it (the close ends the body).
// HTTP/1.1 requests pass untouched.
//
// Sits between NIO's HTTP/1 server codec and `HTTP1ToHTTPServerCodec`. Invariant: one version
// per request head read, taken by the final (non-1xx) head written for it, in order (HTTP/1.1
// pipelining answers in request order).

import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1

final class HTTP10ResponseHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// The versions of the requests read and not yet answered, oldest first.
    private var versions = CircularBuffer<HTTPVersion>(initialCapacity: 2)
    /// The response being written answers an HTTP/1.0 request: close after its end.
    private var closesAfterEnd = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = self.unwrapInboundIn(data) { self.versions.append(head.version) }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch self.unwrapOutboundIn(data) {
        case .head(var head):
            // An interim response (100 Continue) answers no request by itself.
            guard head.status.code >= 200 else {
                context.write(data, promise: promise)
                return
            }
            let version = self.versions.popFirst() ?? .http1_1
            guard version.major == 1, version.minor == 0 else {
                context.write(data, promise: promise)
                return
            }
            head.version = .http1_0
            head.headers.remove(name: "transfer-encoding")
            head.headers.replaceOrAdd(name: "connection", value: "close")
            self.closesAfterEnd = true
            context.write(self.wrapOutboundOut(.head(head)), promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            guard self.closesAfterEnd else {
                context.write(data, promise: promise)
                return
            }
            self.closesAfterEnd = false
            let written = context.eventLoop.makePromise(of: Void.self)
            if let promise { written.futureResult.cascade(to: promise) }
            context.writeAndFlush(data, promise: written)
            written.futureResult.whenComplete { _ in context.close(promise: nil) }
        }
    }
}

extension HTTP10ResponseHandler {
    /// Adds the handler to a pipeline Hummingbird's `HTTP1Channel` set up, before its codec.
    static func install(in pipeline: ChannelPipeline.SynchronousOperations) throws {
        let codec = try pipeline.handler(type: HTTP1ToHTTPServerCodec.self)
        try pipeline.addHandler(HTTP10ResponseHandler(), position: .before(codec))
    }
}

/// Hummingbird's `HTTP1Channel` with `HTTP10ResponseHandler` in its pipeline (the HTTP port of a
/// node that takes no native connections; `HTTPOrNativeChannel` installs it on the others).
struct HTTP1ChannelAnswering10: ServerChildChannel {
    let http: HTTP1Channel

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1Channel.Value> {
        self.http.setup(channel: channel, logger: logger).flatMapThrowing { value in
            try HTTP10ResponseHandler.install(in: channel.pipeline.syncOperations)
            return value
        }
    }

    func handle(value: HTTP1Channel.Value, logger: Logger) async {
        await self.http.handle(value: value, logger: logger)
    }
}
