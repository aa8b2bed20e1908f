// Tells when the client's side of an HTTP connection ended. Hummingbird keeps connections open
// after the client's end of the stream (remote half-closure, so a half-closing client still gets
// its answer): a killed client of an endless answer (an onDisconnect connection) would only be
// noticed at the next keep-alive write. This handler completes `ended` at the first of the
// input closing (the client's FIN), an error, or the channel going inactive (a reset). It sits
// after Hummingbird's HTTP codec, which passes the input-closed event on.

import NIOCore
import NIOHTTPTypes

final class ConnectionEndWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private var promise: EventLoopPromise<Void>?

    /// Completes when the client's side ended; set once the handler is in a pipeline.
    private(set) var ended: EventLoopFuture<Void>?

    func handlerAdded(context: ChannelHandlerContext) {
        let promise = context.eventLoop.makePromise(of: Void.self)
        self.promise = promise
        self.ended = promise.futureResult
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.promise?.succeed()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { self.promise?.succeed() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.promise?.succeed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.promise?.succeed()
        context.fireErrorCaught(error)
    }

    /// The future of `channel`'s client side ending; the channel's close when the channel has
    /// no watcher.
    static func ended(of channel: any Channel) async -> EventLoopFuture<Void> {
        let future = channel.eventLoop.submit {
            (try? channel.pipeline.syncOperations.handler(type: ConnectionEndWatcher.self))?.ended ?? channel.closeFuture
        }
        return (try? await future.get()) ?? channel.closeFuture
    }
}
