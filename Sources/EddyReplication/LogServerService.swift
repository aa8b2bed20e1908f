// The leader's log server: a Unix socket (default `<data>/replication.sock`, mode 0660) where
// followers connect (`LogServerConnection`), and a TCP address too when configured
// (`--replication-listen HOST:PORT`, for followers on other machines; no TLS yet, so bind it
// to a private network). At graceful shutdown the listener and every
// follower connection close; followers reconnect to the next leader process.

import EddyEngine
import EddyProtocol
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization

public struct LogServerService: Service {
    public enum Address: Sendable {
        case unix(String)
        case tcp(host: String, port: Int)
    }

    let address: Address
    let data: DataDirectory
    let registry: FollowerRegistry
    let doorbells: CommitDoorbells
    let logger: Logger
    /// Told when the bind finished (nil: nobody waits).
    let bound: ListenersBound?
    /// The replication secret followers must present (nil: none).
    let secret: String?
    /// TLS for a TCP listener (nil: plain).
    let tls: NIOSSLContext?
    /// See `LogServerConnection.snapshotBootstrapEntries`.
    let snapshotBootstrapEntries: Int
    /// Its default (`--snapshot-bootstrap-entries`).
    public static let snapshotBootstrapEntriesDefault = 50_000

    public init(
        address: Address, data: DataDirectory, registry: FollowerRegistry, doorbells: CommitDoorbells, secret: String? = nil,
        snapshotBootstrapEntries: Int = LogServerService.snapshotBootstrapEntriesDefault, tls: NIOSSLContext? = nil, logger: Logger,
        bound: ListenersBound? = nil
    ) {
        self.snapshotBootstrapEntries = snapshotBootstrapEntries
        self.tls = tls
        self.secret = secret
        self.bound = bound
        self.address = address
        self.data = data
        self.registry = registry
        self.doorbells = doorbells
        self.logger = logger
    }

    public func run() async throws {
        let data = self.data
        let registry = self.registry
        let logger = self.logger
        let doorbells = self.doorbells
        let secret = self.secret
        let tls = self.tls
        let snapshotBootstrapEntries = self.snapshotBootstrapEntries
        let channels = Mutex<[ObjectIdentifier: any Channel]>([:])
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .childChannelInitializer { channel in
                let connection = LogServerConnection(
                    channel: channel, data: data, registry: registry, doorbells: doorbells, secret: secret,
                    snapshotBootstrapEntries: snapshotBootstrapEntries, logger: logger)
                channels.withLock { $0[ObjectIdentifier(channel)] = channel }
                channel.closeFuture.whenComplete { _ in
                    _ = channels.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
                    connection.closed()
                }
                return channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                    try channel.pipeline.syncOperations.addHandler(LogServerFrameHandler(connection: connection))
                }
            }
        let server: any Channel
        do {
            server = try await self.address.bind(bootstrap)
        } catch {
            self.bound?.report(succeeded: false)
            throw error
        }
        self.bound?.report(succeeded: true)
        self.logger.info("log server listening for followers", metadata: ["eddy.replication_address": "\(server.localAddress.map { "\($0)" } ?? "?")"])
        await withGracefulShutdownHandler {
            try? await server.closeFuture.get()
        } onGracefulShutdown: {
            server.close(promise: nil)
            for channel in channels.withLock({ Array($0.values) }) { channel.close(promise: nil) }
        }
        if case .unix(let path) = self.address { unlink(path) }
    }
}

/// Cuts a follower's byte stream into frames for its connection; a malformed stream closes it.
final class LogServerFrameHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let connection: LogServerConnection
    private var decoder = FrameDecoder()

    init(connection: LogServerConnection) {
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.decoder.append(self.unwrapInboundIn(data).readableBytesView)
        do {
            while let frame = try self.decoder.next() { self.connection.received(frame) }
        } catch {
            context.close(promise: nil)
        }
    }
}
