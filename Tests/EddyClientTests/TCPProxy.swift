// A TCP proxy in front of a real eddyd's native or HTTP listener, so a test can cut a client's
// connection at a chosen moment (`cutAll`) while eddyd keeps running. Each accepted connection
// is joined to a new connection to the target; closing either side closes the other.

import NIOCore
import NIOPosix
import Synchronization

final class TCPProxy: Sendable {
    private let server: any Channel
    private let accepted = AcceptedChannels()

    /// Listens on a free port of 127.0.0.1 and forwards to `host`:`port`.
    init(toHost host: String, port: Int) throws {
        let accepted = self.accepted
        self.server = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            // The client's first bytes are read only once they can be forwarded: read before
            // the connection to the target is made, they would reach no handler and be lost.
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                accepted.add(inbound)
                return ClientBootstrap(group: inbound.eventLoop)
                    .channelInitializer { outbound in
                        outbound.eventLoop.makeCompletedFuture { try outbound.pipeline.syncOperations.addHandler(Forward(to: inbound)) }
                    }
                    .connect(host: host, port: port)
                    .flatMapThrowing { outbound in try inbound.pipeline.syncOperations.addHandler(Forward(to: outbound)) }
                    .flatMap { inbound.setOption(.autoRead, value: true) }
            }
            .bind(host: "127.0.0.1", port: 0)
            .wait()
    }

    /// The native URL that reaches the target through the proxy.
    var url: String { "eddy://127.0.0.1:\(self.server.localAddress?.port ?? 0)" }
    /// The same as an HTTP URL, for a proxy in front of eddyd's HTTP listener.
    var httpURL: String { "http://127.0.0.1:\(self.server.localAddress?.port ?? 0)" }

    /// Closes every connection made through the proxy so far (new ones are still accepted).
    func cutAll() {
        for channel in self.accepted.takeAll() { channel.close(promise: nil) }
    }

    deinit {
        self.cutAll()
        self.server.close(promise: nil)
    }
}

/// The proxy's client-side connections not cut yet.
private final class AcceptedChannels: Sendable {
    private let channels = Mutex<[any Channel]>([])

    func add(_ channel: any Channel) { self.channels.withLock { $0.append(channel) } }

    func takeAll() -> [any Channel] { self.channels.withLock { list in defer { list.removeAll() }; return list } }
}

/// Writes what one side reads to the other; closes the other when its side closes.
private final class Forward: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let other: any Channel

    init(to other: any Channel) {
        self.other = other
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.other.writeAndFlush(self.unwrapInboundIn(data), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.other.close(promise: nil)
        context.fireChannelInactive()
    }
}
