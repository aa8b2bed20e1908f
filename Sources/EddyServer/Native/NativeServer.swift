// The native protocol's listener: a Unix domain socket (default `<data>/eddyd.sock`, mode 0660,
// a stale socket file from a crash is replaced), or TCP with `--native-listen HOST:PORT` (no TLS
// and no authentication yet: loopback or a private network only). Each connection gets a
// `NativeConnection`; at graceful shutdown the listener and every connection close (their
// listeners are removed).

import EddyEngine
import EddyModel
import EddyProtocol
import EddyReplication
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization

public struct NativeServerService: Service {
    let address: LogServerService.Address
    /// Where a TCP listener says the address it bound (its port may have been 0).
    let boundAddress: BoundAddress?
    /// What each connection needs, and the connections open.
    let setup: NativeConnectionSetup
    /// Told when the bind finished (nil: nobody waits).
    let bound: ListenersBound?
    /// TLS for a TCP listener (nil: plain).
    let tls: NIOSSLContext?
    var logger: Logger { self.setup.logger }
    /// The onDisconnect writes still running, of this listener's connections and of every
    /// listener that shares it (HTTP presence connections): its stop waits for all of them.
    var onDisconnectRuns: OnDisconnectRuns { self.setup.onDisconnectRuns }

    init(
        address: LogServerService.Address, boundAddress: BoundAddress? = nil, data: DataDirectory, outstandingMax: Int, outstandingBytesMax: Int, budget: MemoryBudget,
        replication: ReplicationRole, doorbells: CommitDoorbells, authenticator: Authenticator = .emulator, tls: NIOSSLContext? = nil,
        onDisconnectRuns: OnDisconnectRuns = OnDisconnectRuns(), subscriptionBounds: SubscriptionBounds = SubscriptionBounds(),
        frameIntake: FrameIntake = FrameIntake(), logger: Logger, bound: ListenersBound? = nil
    ) {
        self.setup = NativeConnectionSetup(
            data: data, outstandingMax: outstandingMax, outstandingBytesMax: outstandingBytesMax, budget: budget, replication: replication,
            doorbells: doorbells, authenticator: authenticator, onDisconnectRuns: onDisconnectRuns, subscriptionBounds: subscriptionBounds,
            frameIntake: frameIntake, logger: logger)
        self.tls = tls
        self.bound = bound
        self.address = address
        self.boundAddress = boundAddress
    }

    public func run() async throws {
        let setup = self.setup
        let connections = setup.connections
        let onDisconnectRuns = self.onDisconnectRuns
        let tls = self.tls
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: Int32(ListenBacklog.connections))
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                    try setup.attach(to: channel)
                }
            }
        let server: any Channel
        do {
            server = try await self.address.bind(bootstrap)
        } catch {
            self.bound?.report(succeeded: false)
            throw error
        }
        let description: String
        switch self.address {
        case .unix(let path):
            description = path
        case .tcp(let host, _):
            description = "\(server.localAddress?.ipAddress ?? host):\(server.localAddress?.port ?? 0)"
            self.boundAddress?.set(description)
        }
        self.bound?.report(succeeded: true)
        self.logger.info("native protocol listening", metadata: ["eddy.address": "\(description)"])
        await withGracefulShutdownHandler {
            try? await server.closeFuture.get()
        } onGracefulShutdown: {
            server.close(promise: nil)
            connections.closeAll()
        }
        if case .unix(let path) = self.address { unlink(path) }
        // The connections' onDisconnect writes run before the databases close (they are
        // stopped after this service): wait for every closed connection, then for its writes.
        let started = ContinuousClock.now
        while !connections.isEmpty || !onDisconnectRuns.isIdle, ContinuousClock.now - started < Self.onDisconnectWaitMax {
            try? await Task.sleep(for: .milliseconds(10))
        }
        if !onDisconnectRuns.isIdle {
            self.logger.warning("stopping without waiting longer for onDisconnect writes", metadata: ["eddy.waited": "\(Self.onDisconnectWaitMax)"])
        }
    }

    /// How long a stop waits for the connections' onDisconnect writes.
    static let onDisconnectWaitMax: Duration = .seconds(30)
}

/// The address a TCP listener bound, once it has (its port may have been 0).
final class BoundAddress: Sendable {
    private let address = Mutex<String?>(nil)
    func set(_ address: String) { self.address.withLock { $0 = address } }
    var value: String? { self.address.withLock { $0 } }
}

/// Channels of open connections, to close at shutdown.
final class OpenConnections: Sendable {
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])

    func add(_ channel: any Channel) { self.channels.withLock { $0[ObjectIdentifier(channel)] = channel } }
    func remove(_ channel: any Channel) { _ = self.channels.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) } }
    var isEmpty: Bool { self.channels.withLock { $0.isEmpty } }
    func closeAll() {
        for channel in self.channels.withLock({ Array($0.values) }) { channel.close(promise: nil) }
    }
}

/// Cuts the byte stream into frames and hands them to the connection's request task, which
/// runs them one after the other: a connection's writes commit in the order it sent them.
/// A small write that arrives while that task is idle and that need not wait is handled on the
/// event loop instead (`NativeConnection.handleWriteAtOnce`), with the same effect and answer.
/// At most `requestsMax` requests or `requestBytesMax` bytes of them may wait; past either,
/// the socket is not read until the task has caught up (back-pressure on the client, whose
/// sends block), so a client that pipelines faster than it is served costs bounded memory.
/// Across connections, the bytes of frames arriving and of requests waiting count in the
/// intake's budget, and a frame must keep arriving (`FrameIntake`).
final class NativeFrameHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    static let requestsMax = 1024
    static let requestBytesMax = 64 << 20

    private let connection: NativeConnection
    private var decoder = FrameDecoder()
    private let requests: AsyncStream<Frame>.Continuation
    private let stream: AsyncStream<Frame>
    private var queuedRequests = 0
    private var queuedBytes = 0
    /// Of `queuedRequests`, the writes (each submitted to the engine when the task handles it).
    private var queuedWrites = 0
    /// A read was asked for while over a bound; it is passed on once the task catches up.
    private var readHeldBack = false
    private var context: ChannelHandlerContext?
    private let intake: FrameIntake
    /// Taken from `intake.budget`: the decoder's bytes and the queued requests'.
    private var reservedBytes = 0
    /// When bytes last arrived (or reading resumed after back-pressure).
    private var lastArrival = NIODeadline.now()
    private var stallCheck: Scheduled<Void>?
    private var refused = false

    init(connection: NativeConnection, intake: FrameIntake = FrameIntake()) {
        self.connection = connection
        self.intake = intake
        (self.stream, self.requests) = AsyncStream.makeStream(of: Frame.self, bufferingPolicy: .unbounded)
    }

    private var isOverBounds: Bool {
        self.queuedRequests >= Self.requestsMax || self.queuedBytes >= Self.requestBytesMax
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let connection = self.connection
        let stream = self.stream
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        Task {
            for await frame in stream {
                // Requests still queued when the connection closed: only what changes the data
                // (and the auth it acts with) still runs; reads nobody will receive do not.
                if !connection.isClosed || NativeFrameHandler.runsAfterClose(frame.kind) { await connection.handle(frame) }
                let bytes = frame.payload.count
                let write = frame.kind == .write
                handler.eventLoop.execute { handler.value.requestDone(bytes: bytes, write: write) }
            }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        self.releaseAll()
    }

    /// Kinds of request that still run when queued before the connection closed.
    static func runsAfterClose(_ kind: Frame.Kind) -> Bool {
        switch kind {
        case .write, .setRules, .auth, .releaseCheckpoint: return true
        default: return false
        }
    }

    private func requestDone(bytes: Int, write: Bool) {
        self.queuedRequests -= 1
        self.queuedBytes -= bytes
        if write { self.queuedWrites -= 1 }
        self.account()
        if self.readHeldBack, !self.isOverBounds, let context = self.context {
            self.readHeldBack = false
            self.lastArrival = .now()
            context.read()
        }
    }

    /// Brings the reservation to what the connection holds now; refuses the connection when
    /// the budget cannot take it, and watches a frame that is still arriving.
    private func account() {
        guard !self.refused else { return }
        let held = self.decoder.bufferedBytes + self.queuedBytes
        if held > self.reservedBytes {
            guard self.intake.budget.reserve(held - self.reservedBytes) else {
                self.refused = true  // what still arrives is read and dropped
                self.connection.protocolError(
                    ProtocolError(
                        "too many request bytes in flight: \(self.intake.budget.usedBytes) of request-bodies-bytes-total (\(self.intake.budget.bytesMax) bytes) are held by requests of all connections; retry shortly (see --request-bodies-bytes-total)"
                    ), code: .busy, mode: .output)
                self.releaseAll()
                return
            }
        } else if held < self.reservedBytes {
            self.intake.budget.release(self.reservedBytes - held)
        }
        self.reservedBytes = held
        if self.decoder.bufferedBytes > 0, self.stallCheck == nil { self.scheduleStallCheck(at: self.lastArrival + .seconds(self.intake.stallSeconds)) }
    }

    private func scheduleStallCheck(at deadline: NIODeadline) {
        guard let context = self.context else { return }
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        self.stallCheck = context.eventLoop.scheduleTask(deadline: deadline) { handler.value.checkStall() }
    }

    /// A frame that got no bytes for `stallSeconds` (while this side kept reading) ends the
    /// connection.
    private func checkStall() {
        self.stallCheck = nil
        guard !self.refused, self.decoder.bufferedBytes > 0 else { return }
        let due = self.lastArrival + .seconds(self.intake.stallSeconds)
        if self.readHeldBack || NIODeadline.now() < due {
            self.scheduleStallCheck(at: self.readHeldBack ? .now() + .seconds(self.intake.stallSeconds) : due)
            return
        }
        self.refused = true
        self.connection.protocolError(
            ProtocolError(
                "a frame stopped arriving: no bytes for \(self.intake.stallSeconds) s with \(self.decoder.bufferedBytes) bytes of it received (see --http-body-timeout-seconds)"
            ), mode: .output)
        self.releaseAll()
    }

    private func releaseAll() {
        self.stallCheck?.cancel()
        self.stallCheck = nil
        if self.reservedBytes > 0 { self.intake.budget.release(self.reservedBytes) }
        self.reservedBytes = 0
    }

    func read(context: ChannelHandlerContext) {
        if self.isOverBounds {
            self.readHeldBack = true
        } else {
            context.read()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !self.refused else { return }
        let buffer = self.unwrapInboundIn(data)
        self.lastArrival = .now()
        self.decoder.append(buffer.readableBytesView)
        defer { self.account() }
        do {
            while let frame = try self.decoder.next() {
                // With no earlier request still queued or being handled, a write that need not
                // wait is handled here: the order of requests is kept all the same.
                if self.queuedRequests == 0, self.connection.handleWriteAtOnce(frame) { continue }
                // A subscribe takes its place in the order of writes here, unless a write of
                // this connection waits before it: that write reaches the engine after the
                // place was taken, so it would wait for the listen, which waits for the write's
                // answer (until the place expires, 50 ms). The listen then takes its place when
                // its turn comes, after those writes.
                if frame.kind == .subscribe, self.queuedWrites == 0 { self.connection.reserveListenOrder(for: frame) }
                if frame.kind == .write { self.queuedWrites += 1 }
                self.queuedRequests += 1
                self.queuedBytes += frame.payload.count
                self.requests.yield(frame)
            }
        } catch {
            self.connection.protocolError(error)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.requests.finish()
        self.refused = true  // requests still queued are done without counting again
        self.releaseAll()
        context.fireChannelInactive()
    }
}
