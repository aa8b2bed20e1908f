// A blocking client of the replication protocol over TLS (SwiftNIO + swift-nio-ssl), for
// followers whose leader serves `--replication-listen` with a certificate: the same
// `send`/`receive`/`shutdown` as `NativeClient` (`FrameChannel`), so the follower runtime does
// not care which it has. The leader's certificate is verified against the configured CA
// (`--tls-ca-file`) and its name or IP address; a failed verification fails the connection
// (closed, never plain text).
//
// Bounds: at most `framesMax` decoded frames wait here; past that the channel stops reading
// (autoRead off) until the receiver has taken half of them. (Reading stays on otherwise: the
// TLS handshake needs it before the first frame.)
// Thread-safety: one thread sends and one receives at a time (as `NativeClient`); the inbox is
// guarded by its condition.

import EddyProtocol
import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// What the follower runtime needs of a connection to its leader.
public protocol FrameChannel: AnyObject, Sendable {
    func send(_ frame: Frame) throws(ProtocolError)
    func receive() throws(ProtocolError) -> Frame?
    func shutdown()
}

extension NativeClient: FrameChannel {}

/// A connection to the leader at `address` (a socket path or HOST:PORT): over TLS, verified
/// against `caFile`, when the leader is HOST:PORT and a CA is configured; plain otherwise.
public func connectToLeader(_ address: String, caFile: String?) throws(ProtocolError) -> any FrameChannel {
    guard let caFile, !address.contains("/") else { return try NativeClient(address: address) }
    guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
        throw ProtocolError("address \(address) is neither a socket path nor HOST:PORT")
    }
    var host = String(address[..<colon])
    if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    return try TLSFrameClient(host: host, port: port, caFile: caFile)
}

public final class TLSFrameClient: FrameChannel, @unchecked Sendable {
    // @unchecked: `channel` is immutable and thread-safe; `inbox` locks.
    private let channel: any Channel
    private let inbox: Inbox

    /// Connects to `host:port`, verifying the server's certificate against the CA bundle at
    /// `caFile` (PEM).
    public init(host: String, port: Int, caFile: String) throws(ProtocolError) {
        let inbox = Inbox()
        do {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(caFile)
            tls.certificateVerification = .fullVerification
            tls.minimumTLSVersion = .tlsv12
            let context = try NIOSSLContext(configuration: tls)
            // SNI and name checks take a host name; an IP address is checked against the
            // certificate's IP addresses instead.
            let isAddress = (try? SocketAddress(ipAddress: host, port: 0)) != nil
            let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: context, serverHostname: isAddress ? nil : host))
                        try channel.pipeline.syncOperations.addHandler(InboxHandler(inbox: inbox))
                    }
                }
            self.channel = try bootstrap.connect(host: host, port: port).wait()
        } catch {
            throw ProtocolError("cannot connect over TLS to \(host):\(port): \(error)")
        }
        self.inbox = inbox
    }

    public func send(_ frame: Frame) throws(ProtocolError) {
        do {
            try self.channel.writeAndFlush(ByteBuffer(bytes: frame.encoded())).wait()
        } catch {
            throw ProtocolError("writing to the TLS connection failed: \(self.inbox.failure ?? "\(error)")")
        }
    }

    public func receive() throws(ProtocolError) -> Frame? {
        try self.inbox.take(resume: { _ = self.channel.setOption(.autoRead, value: true) })
    }

    public func shutdown() {
        self.channel.close(promise: nil)
        self.inbox.close(nil)
    }

    /// Decoded frames waiting for `receive`.
    final class Inbox: @unchecked Sendable {
        static let framesMax = 256
        private let condition = NSCondition()
        private var frames: [Frame] = []
        private var decoder = FrameDecoder(lengthMax: Frame.fromServerBytesMax)
        private var closed = false
        /// Reading stopped because `framesMax` frames wait.
        private var paused = false
        private(set) var failure: String?

        /// On the event loop: bytes arrived. Returns true when reading must pause.
        func append(_ bytes: ByteBufferView) -> Bool {
            self.condition.lock()
            defer { self.condition.unlock() }
            self.decoder.append(bytes)
            do {
                while let frame = try self.decoder.next() { self.frames.append(frame) }
            } catch {
                self.failure = error.message
                self.closed = true
            }
            self.condition.broadcast()
            if self.frames.count >= Self.framesMax, !self.paused {
                self.paused = true
                return true
            }
            return false
        }

        func close(_ failure: String?) {
            self.condition.lock()
            if self.failure == nil { self.failure = failure }
            self.closed = true
            self.condition.broadcast()
            self.condition.unlock()
        }

        /// The next frame (waiting for one); `resume` turns reading back on once half the
        /// frames that paused it were taken.
        func take(resume: () -> Void) throws(ProtocolError) -> Frame? {
            self.condition.lock()
            defer { self.condition.unlock() }
            while self.frames.isEmpty {
                if self.closed {
                    if let failure = self.failure { throw ProtocolError("the TLS connection failed: \(failure)") }
                    return nil
                }
                self.condition.wait()
            }
            let frame = self.frames.removeFirst()
            if self.paused, self.frames.count <= Self.framesMax / 2 {
                self.paused = false
                resume()
            }
            return frame
        }
    }

    final class InboxHandler: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let inbox: Inbox

        init(inbox: Inbox) { self.inbox = inbox }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if self.inbox.append(Self.unwrapInboundIn(data).readableBytesView) {
                _ = context.channel.setOption(.autoRead, value: false)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            self.inbox.close(nil)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            self.inbox.close("\(error)")
            context.close(promise: nil)
        }
    }
}
