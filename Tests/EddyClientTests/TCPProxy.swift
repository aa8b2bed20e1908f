// A TCP proxy in front of a real eddyd's native or HTTP listener, so a test can cut a client's
// connection at a chosen moment (`cutAll`) while eddyd keeps running, or hold back what eddyd
// sends on event streams (`holdStreams`: an HTTP connection whose request accepts
// text/event-stream) while other connections flow. Each accepted connection is joined to a new
// connection to the target; closing either side closes the other. It also keeps the request
// lines each client connection sent (`requestLines`), so a test can see which requests shared
// a connection.

import NIOCore
import NIOPosix
import Synchronization

final class TCPProxy: Sendable {
    private let server: any Channel
    private let accepted = AcceptedChannels()
    private let streams = HeldStreams()
    private let links = Links()

    /// Listens on a free port of 127.0.0.1 and forwards to `host`:`port`.
    init(toHost host: String, port: Int) throws {
        let accepted = self.accepted
        let streams = self.streams
        let links = self.links
        self.server = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            // The client's first bytes are read only once they can be forwarded: read before
            // the connection to the target is made, they would reach no handler and be lost.
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                accepted.add(inbound)
                let link = Link(streams: streams)
                links.add(link)
                return ClientBootstrap(group: inbound.eventLoop)
                    .channelInitializer { outbound in
                        outbound.eventLoop.makeCompletedFuture {
                            try outbound.pipeline.syncOperations.addHandler(Forward(to: inbound, link: link, fromTarget: true))
                        }
                    }
                    .connect(host: host, port: port)
                    .flatMapThrowing { outbound in
                        try inbound.pipeline.syncOperations.addHandler(Forward(to: outbound, link: link, fromTarget: false))
                    }
                    .flatMap { inbound.setOption(.autoRead, value: true) }
            }
            .bind(host: "127.0.0.1", port: 0)
            .wait()
    }

    /// Forwards to the host and port of `url` ("eddy://host:port" or "http://host:port").
    convenience init(to url: String) throws {
        let address = url.split(separator: "/")[1].split(separator: ":")  // ["scheme:", "host:port"]
        try self.init(toHost: String(address[0]), port: Int(address[1])!)
    }

    /// The native URL that reaches the target through the proxy.
    var url: String { "eddy://127.0.0.1:\(self.server.localAddress?.port ?? 0)" }
    /// The same as an HTTP URL, for a proxy in front of eddyd's HTTP listener.
    var httpURL: String { "http://127.0.0.1:\(self.server.localAddress?.port ?? 0)" }
    /// `httpURL` for the client's REST and SSE fallback.
    var restURL: String { self.httpURL + "?transport=rest" }

    /// Per connection accepted so far, in order: the request lines its client sent
    /// ("GET /a.json HTTP/1.1"), in order.
    var requestLines: [[String]] { self.links.all.map(\.requestLines) }

    /// Closes every connection made through the proxy so far (new ones are still accepted).
    func cutAll() {
        for channel in self.accepted.takeAll() { channel.close(promise: nil) }
    }

    /// From now on, what the target sends on event streams is held back (other connections
    /// flow), until `releaseStreams`.
    func holdStreams() { self.streams.hold() }

    /// Sends on what was held back, in order, and stops holding.
    func releaseStreams() { self.streams.release() }

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

/// Every proxied connection's `Link`, in the order accepted.
private final class Links: Sendable {
    private let links = Mutex<[Link]>([])

    func add(_ link: Link) { self.links.withLock { $0.append(link) } }

    var all: [Link] { self.links.withLock { $0 } }
}

/// Whether the target's bytes to event-stream connections are held, and what was held: per
/// client channel, in the order read. Released bytes are written by a task of the channel's
/// event loop (where its reads run), and a read that comes before that task joins them, so a
/// channel's bytes keep their order.
private final class HeldStreams: Sendable {
    private struct State {
        var holding = false
        var held: [ObjectIdentifier: (channel: any Channel, bytes: [ByteBuffer])] = [:]
    }

    private let state = Mutex(State())

    func hold() { self.state.withLock { $0.holding = true } }

    /// Holds `bytes` for `channel` and answers true while holding (or while bytes held for it
    /// wait to be written); false otherwise.
    func holdIfHolding(_ bytes: ByteBuffer, for channel: any Channel) -> Bool {
        self.state.withLock { state in
            let id = ObjectIdentifier(channel)
            guard state.holding || state.held[id] != nil else { return false }
            state.held[id, default: (channel, [])].bytes.append(bytes)
            return true
        }
    }

    func release() {
        let channels = self.state.withLock { state in
            state.holding = false
            return state.held.values.map(\.channel)
        }
        for channel in channels {
            channel.eventLoop.execute {
                let bytes = self.state.withLock { $0.held.removeValue(forKey: ObjectIdentifier(channel))?.bytes ?? [] }
                for buffer in bytes { channel.write(buffer, promise: nil) }
                channel.flush()
            }
        }
    }
}

/// One proxied connection: whether the client's request made it an event stream, and the
/// request lines its client sent (lines ending " HTTP/1.1": the tests send no such body).
private final class Link: Sendable {
    let streams: HeldStreams
    private let eventStream = Atomic(false)
    private let lines = Mutex<[String]>([])

    var requestLines: [String] { self.lines.withLock { $0 } }

    init(streams: HeldStreams) {
        self.streams = streams
    }

    var isEventStream: Bool { self.eventStream.load(ordering: .relaxed) }

    func sawClientBytes(_ bytes: ByteBuffer) {
        let text = String(buffer: bytes)
        if text.lowercased().contains("text/event-stream") { self.eventStream.store(true, ordering: .relaxed) }
        let requests = text.split(separator: "\r\n").filter { $0.hasSuffix(" HTTP/1.1") }.map(String.init)
        if !requests.isEmpty { self.lines.withLock { $0 += requests } }
    }
}

/// Writes what one side reads to the other; closes the other when its side closes.
private final class Forward: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let other: any Channel
    private let link: Link
    /// Reads from the target (written to the client); else from the client.
    private let fromTarget: Bool

    init(to other: any Channel, link: Link, fromTarget: Bool) {
        self.other = other
        self.link = link
        self.fromTarget = fromTarget
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = self.unwrapInboundIn(data)
        if self.fromTarget {
            if self.link.isEventStream, self.link.streams.holdIfHolding(bytes, for: self.other) { return }
        } else {
            self.link.sawClientBytes(bytes)
        }
        self.other.writeAndFlush(bytes, promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.other.close(promise: nil)
        context.fireChannelInactive()
    }
}
