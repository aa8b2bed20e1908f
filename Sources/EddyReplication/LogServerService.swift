// The leader's log server: a Unix socket (default `<data>/replication.sock`, mode 0660) where
// followers connect (`LogServerConnection`), and a TCP address too when configured
// (`--replication-listen HOST:PORT`, for followers on other machines; no TLS yet, so bind it
// to a private network). At graceful shutdown the listener closes, the connected followers
// get up to `catchUpWaitMax` to apply the newest entry of their namespace, and then every
// follower connection closes; followers reconnect to the next leader process. The HTTP and
// native servers stop before this service, so no write is acknowledged meanwhile: a graceful
// stop (SIGTERM, a cluster leader's handover) loses no acknowledged write that a connected
// follower could still take, even without `--sync-followers`.

import EddyEngine
import EddyModel
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
    /// Open connections at most, shared by the leader's listeners (`--replication-connections-max`).
    let connectionCap: ReplicationConnectionCap
    /// Its default (`--snapshot-bootstrap-entries`).
    public static let snapshotBootstrapEntriesDefault = 50_000
    /// At graceful shutdown, how long connected followers get to apply the newest entries.
    static let catchUpWaitMax: Duration = .seconds(5)

    public init(
        address: Address, data: DataDirectory, registry: FollowerRegistry, doorbells: CommitDoorbells, secret: String? = nil,
        snapshotBootstrapEntries: Int = LogServerService.snapshotBootstrapEntriesDefault, tls: NIOSSLContext? = nil,
        connectionCap: ReplicationConnectionCap = ReplicationConnectionCap(), logger: Logger, bound: ListenersBound? = nil
    ) {
        self.connectionCap = connectionCap
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
        let cap = self.connectionCap
        let channels = Mutex<[ObjectIdentifier: any Channel]>([:])
        // Followers' watches of the namespaces they parked, fired by any namespace's commits.
        let watches = NamespaceWatches()
        let observer = data.observeCommits { namespace, newest in watches.committed(namespace, newest: newest) }
        defer { data.stopObservingCommits(observer) }
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .childChannelInitializer { channel in
                let connection = LogServerConnection(
                    channel: channel, data: data, registry: registry, doorbells: doorbells, watches: watches, secret: secret,
                    snapshotBootstrapEntries: snapshotBootstrapEntries, logger: logger)
                let admitted = cap.admit()
                channels.withLock { $0[ObjectIdentifier(channel)] = channel }
                channel.closeFuture.whenComplete { _ in
                    _ = channels.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
                    connection.closed()
                    if admitted { cap.release() }
                }
                return channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                    try channel.pipeline.syncOperations.addHandler(LogServerFrameHandler(connection: connection, admitted: admitted, cap: cap))
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
        }
        if case .unix(let path) = self.address { unlink(path) }
        await self.waitForFollowersToCatchUp()
        for channel in channels.withLock({ Array($0.values) }) { channel.close(promise: nil) }
    }

    /// Until every connected follower applied the newest entry of its namespace, at most
    /// `catchUpWaitMax` (the followers' connections stay open meanwhile and keep streaming).
    private func waitForFollowersToCatchUp() async {
        let data = self.data
        func newest(_ namespace: String) -> LogID? {
            guard let lease = data.leaseIfOpen(namespace: namespace) else { return nil }
            defer { lease.release() }
            return try? lease.engine.lastLogID()
        }
        let started = ContinuousClock.now
        var behind = self.registry.followersBehind(newest)
        guard behind > 0 else { return }
        self.logger.info("waiting for followers to apply the newest entries before stopping", metadata: ["eddy.followers_behind": "\(behind)"])
        while behind > 0, ContinuousClock.now - started < Self.catchUpWaitMax {
            try? await Task.sleep(for: .milliseconds(5))
            behind = self.registry.followersBehind(newest)
        }
        if behind > 0 {
            self.logger.warning(
                "stopping before every follower applied the newest entries",
                metadata: ["eddy.followers_behind": "\(behind)", "eddy.waited": "\(Self.catchUpWaitMax)"])
        }
    }
}

/// Cuts a follower's byte stream into frames for its connection; a malformed stream closes it.
final class LogServerFrameHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let connection: LogServerConnection
    private var decoder = FrameDecoder()
    private let admitted: Bool
    private let cap: ReplicationConnectionCap

    init(connection: LogServerConnection, admitted: Bool, cap: ReplicationConnectionCap) {
        self.connection = connection
        self.admitted = admitted
        self.cap = cap
    }

    func channelActive(context: ChannelHandlerContext) {
        self.connection.opened(admitted: self.admitted, cap: self.cap)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A refused connection's frames are not read: it is being closed.
        guard self.admitted else { return }
        self.decoder.append(self.unwrapInboundIn(data).readableBytesView)
        do {
            while let frame = try self.decoder.next() { self.connection.received(frame) }
        } catch {
            context.close(promise: nil)
        }
    }
}
