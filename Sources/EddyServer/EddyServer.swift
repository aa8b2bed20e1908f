// Assembles a serving daemon from a configuration: the data directory (one engine per
// namespace), the Hummingbird HTTP server, the native socket, and either the log server for
// followers (a leader) or the follower runtime (`eddyd follow`), in one ServiceGroup that stops on SIGTERM or
// SIGINT: the HTTP server stops first, then every commit queue drains and RocksDB closes.

import EddyEngine
import EddyModel
import EddyReplication
import EddyStorage
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle
import UnixSignals

#if canImport(Glibc)
import Glibc
#endif

public enum EddyServer {
    /// The `Server` header of the HTTP listener's answers.
    static let serverName = "eddyd"

    /// The credentials the configuration names, read from their files.
    static func authenticator(_ configuration: ServeConfiguration) async throws(EddyError) -> Authenticator {
        try await Authenticator.make(try Self.authenticatorConfiguration(configuration))
    }

    /// The credentials of `configuration`, its files read now.
    static func authenticatorConfiguration(_ configuration: ServeConfiguration) throws(EddyError) -> Authenticator.Configuration {
        var auth = Authenticator.Configuration()
        auth.adminSecret = try configuration.adminTokenFile.map { file throws(EddyError) in try self.secret(file, option: "admin-token-file") }
        auth.hmacSecret = try configuration.jwtSecretFile.map { file throws(EddyError) in try self.secret(file, option: "jwt-secret-file") }
        auth.rsaKeysJSON = try configuration.jwtKeysFile.map { file throws(EddyError) in try self.secret(file, option: "jwt-keys-file") }
        auth.projectID = configuration.projectID
        auth.emulatorConventions = configuration.emulatorConventions
        return auth
    }

    /// A secret file's contents, trimmed; refused when unreadable or empty.
    static func secret(_ path: String, option: String) throws(EddyError) -> String {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw EddyError(.invalidArgument, "--\(option) \(path) cannot be read: \(error.localizedDescription)")
        }
        let secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
        // HS256 keys shorter than the hash (32 bytes) are weak (and jwt-kit refuses them).
        let minimum = option == "jwt-keys-file" ? 1 : (option == "jwt-secret-file" ? 32 : 16)
        guard secret.utf8.count >= minimum else {
            throw EddyError(.invalidArgument, "--\(option) \(path) holds \(secret.utf8.count) bytes; it needs at least \(minimum)")
        }
        return secret
    }

    /// Runs until SIGTERM/SIGINT. `onListening` receives the bound HTTP address.
    public static func serve(
        _ configuration: ServeConfiguration, logger: Logger, metricsRegistry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
        logLevel: LogLevelControl = LogLevelControl(.info),
        run: ServeRun? = nil, onListening: @escaping @Sendable (_ http: String, _ nativeTCP: String?) -> Void = { _, _ in }
    ) async throws {
        try configuration.validate()
        // Files the daemon makes are its own: 0600 files and 0700 directories (the sockets are
        // set to 0660 where they are bound).
        umask(0o077)
        if configuration.insecureNoAuth {
            for (option, host) in configuration.tcpListeners where !ServeConfiguration.isLoopback(host) {
                logger.critical(
                    "listening beyond loopback WITHOUT AUTHENTICATION (--insecure-no-auth): anyone who reaches this port reads and writes everything",
                    metadata: ["eddy.option": "\(option)", "eddy.host": "\(host)"])
            }
        }
        if configuration.emulatorConventions, configuration.authConfigured {
            // Issue 13's rule: the emulator's conventions hold on loopback without an admin
            // secret, token keys or not (firebase-admin in emulator mode only sends `owner`).
            // Anything forwarded to this loopback port (a reverse proxy) gets them too: say so.
            logger.warning(
                "ID tokens are verified, but without --admin-token-file the Firebase emulator's conventions stay on this loopback listener: `Bearer owner` is the admin and bypasses the rules; set --admin-token-file to close that, above all behind a reverse proxy"
            )
        }
        DataDirectoryPermissions.warnIfOpen(configuration.dataDirectory, logger: logger)
        let authenticator = try await Self.authenticator(configuration)
        let replicationSecret = try configuration.replicationSecretFile.map { file throws(EddyError) in try Self.secret(file, option: "replication-secret-file") }
        let certificate = try configuration.tlsCertificateFile.map { file throws(EddyError) in
            try ServerCertificate(certificateFile: file, keyFile: configuration.tlsKeyFile ?? "")
        }
        let tls = certificate?.configuration
        let tlsContext = try tls.map { configuration throws(EddyError) in try ServerTLS.context(configuration) }
        var engineOptions = EngineOptions(durability: configuration.durability)
        // Firebase: a new database is locked unless it is the emulator's.
        engineOptions.defaultRules = configuration.authConfigured ? .locked : .default
        engineOptions.readerThreads = 2
        engineOptions.indexBuildChunkChildren = configuration.indexBuildChunk
        engineOptions.indexBuildPauseMilliseconds = configuration.indexBuildPauseMilliseconds
        engineOptions.leader = configuration.leader
        engineOptions.writeFence = run?.writeFence
        engineOptions.diskReserveBytes = UInt64(clamping: configuration.diskReserveBytes)
        // One cache for every namespace: its capacity bounds them all together.
        engineOptions.blockCache = BlockCache(capacityBytes: configuration.blockCacheBytes)
        let data = try DataDirectory(path: configuration.dataDirectory, options: engineOptions, logger: logger)
        run?.opened(data)
        // A backup copying a checkpoint cannot outlive the daemon that made it.
        data.removeStaleCheckpoints()
        let followerName =
            configuration.followerName
            ?? "\(ProcessInfo.processInfo.hostName):\(URL(fileURLWithPath: configuration.dataDirectory).standardizedFileURL.path)"
        // Open the default namespace now so a broken data directory fails startup, not a request;
        // a follower first replaces its replica with a snapshot when the leader says it must.
        do {
            if let leader = configuration.leader {
                // Every namespace replicated before, before any of them opens.
                for namespace in Set([DataDirectory.defaultNamespace] + data.namespacesOnDisk()).sorted() {
                    try FollowerBootstrap.prepare(
                        dataDirectory: configuration.dataDirectory, leader: leader, name: followerName, namespace: namespace,
                        secret: replicationSecret, caFile: configuration.tlsCAFile, discardsAnotherHistory: run?.discardsAnotherHistory ?? false,
                        logger: logger)
                }
            }
            _ = try data.engine(namespace: DataDirectory.defaultNamespace)
            if let rulesFile = configuration.rulesFile { _ = try await RulesFile.apply(rulesFile, to: data, logger: logger) }
        } catch {
            data.close()
            throw error
        }
        logger.info(
            "starting eddyd",
            metadata: [
                "eddy.data": "\(configuration.dataDirectory)",
                "eddy.http": "\(configuration.httpHost):\(configuration.httpPort)",
                "eddy.durability": "\(configuration.durability.rawValue)",
                "eddy.block_cache_bytes": "\(configuration.blockCacheBytes)",
                "eddy.request_bytes_max": "\(configuration.requestBytesMax)",
                "eddy.socket": "\(configuration.effectiveSocketPath)",
                configuration.leader == nil ? "eddy.replication_socket" : "eddy.leader":
                    "\(configuration.leader ?? configuration.effectiveReplicationSocketPath)",
            ])
        let replication: ReplicationRole
        var replicationServices: [any Service] = []
        let doorbells = CommitDoorbells()
        // The sockets that must be bound before the daemon says it is ready: the native socket,
        // and on a leader the replication socket (and its TCP listener when configured).
        let streamBudget = MemoryBudget(bytesMax: configuration.streamBuffersBytesTotal)
        let bound = ListenersBound(
            count: 1 + (configuration.nativeListen == nil ? 0 : 1)
                + (configuration.leader == nil ? 1 + (configuration.replicationListen == nil ? 0 : 1) : 0))
        let nativeTCPAddress = BoundAddress()
        let registry: FollowerRegistry?
        var leaderConnections: ReplicationConnectionCap? = nil
        if let leader = configuration.leader {
            let follower = FollowerSupervisor(
                leader: leader, name: followerName, data: data, secret: replicationSecret, caFile: configuration.tlsCAFile,
                endsOnAnotherHistory: run?.discardsAnotherHistory ?? false, logger: logger)
            replication = .follower(follower)
            replicationServices.append(follower)
            registry = nil
        } else {
            let followers = FollowerRegistry()
            replication = .leader(
                followers, syncFollowers: configuration.syncFollowers,
                syncTimeout: .milliseconds(configuration.syncFollowersTimeoutMilliseconds))
            // One cap for both listeners.
            let replicationConnections = ReplicationConnectionCap(max: configuration.replicationConnectionsMax)
            leaderConnections = replicationConnections
            replicationServices.append(
                LogServerService(
                    address: .unix(configuration.effectiveReplicationSocketPath), data: data, registry: followers, doorbells: doorbells,
                    secret: replicationSecret, snapshotBootstrapEntries: configuration.snapshotBootstrapEntries,
                    connectionCap: replicationConnections, logger: logger, bound: bound))
            if let listen = configuration.replicationListen {
                let (host, port) = try ServeConfiguration.parseHostPort(listen)
                replicationServices.append(
                    LogServerService(
                        address: .tcp(host: host, port: port), data: data, registry: followers, doorbells: doorbells, secret: replicationSecret,
                        snapshotBootstrapEntries: configuration.snapshotBootstrapEntries, tls: tlsContext, connectionCap: replicationConnections,
                        logger: logger, bound: bound))
            }
            registry = followers
        }
        // Shared by the native listeners and HTTP presence connections: the Unix listener, which
        // stops after HTTP and before the databases, waits for all of their onDisconnect writes.
        let onDisconnectRuns = OnDisconnectRuns()
        let subscriptionBounds = SubscriptionBounds(
            perConnection: configuration.subscriptionsPerConnectionMax, total: configuration.subscriptionsMax)
        // Request bytes being received and applied: HTTP bodies and native frames together.
        let requestBudget = MemoryBudget(bytesMax: configuration.requestBodiesBytesTotal)
        let frameIntake = FrameIntake(budget: requestBudget, stallSeconds: Int64(configuration.httpBodyTimeoutSeconds))
        var nativeTCP: [NativeServerService] = []
        if let listen = configuration.nativeListen {
            let (host, port) = try ServeConfiguration.parseHostPort(listen)
            nativeTCP.append(
                NativeServerService(
                    address: .tcp(host: host, port: port), boundAddress: nativeTCPAddress, data: data,
                    outstandingMax: configuration.streamBufferBatches, outstandingBytesMax: configuration.streamBufferBytes,
                    budget: streamBudget, replication: replication, doorbells: doorbells, authenticator: authenticator, tls: tlsContext,
                    onDisconnectRuns: onDisconnectRuns, subscriptionBounds: subscriptionBounds, frameIntake: frameIntake, logger: logger,
                    bound: bound))
        }
        let retention = LogRetentionService(
            data: data, retention: configuration.logRetention, interval: .milliseconds(configuration.logRetentionCheckMilliseconds),
            registry: registry, logger: logger)
        let metrics = MetricsEndpoint(
            registry: metricsRegistry, data: data, replication: replication, replicationConnections: leaderConnections)
        var metricsListener: [any Service] = []
        if let listen = configuration.metricsListen {
            let (host, port) = try ServeConfiguration.parseHostPort(listen)
            let health = HealthEndpoint(data: data, replication: replication, readyLagMaxSeconds: Double(configuration.readyLagMaxSeconds))
            metricsListener.append(
                Application(
                    responder: MetricsListenerResponder(metrics: metrics, health: health),
                    configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "eddyd-metrics"),
                    onServerRunning: { channel in
                        logger.info("metrics listening", metadata: ["eddy.metrics": "\(channel.localAddress.map { "\($0)" } ?? listen)"])
                    },
                    logger: logger))
        }
        let responder = RESTResponder(
            data: data, requestBytesMax: configuration.requestBytesMax,
            bodyBudget: requestBudget, keepAliveSeconds: configuration.sseKeepAliveSeconds,
            streamBufferBatches: configuration.streamBufferBatches, streamBufferBytes: configuration.streamBufferBytes,
            streamBudget: streamBudget, replication: replication, authenticator: authenticator,
            origins: OriginPolicy(allowedHosts: configuration.allowedHosts, corsOrigins: configuration.corsOrigins), metrics: metrics,
            readyLagMaxSeconds: Double(configuration.readyLagMaxSeconds), logRequests: configuration.logRequests,
            writeRedirect: run?.writeRedirect, onDisconnectRuns: onDisconnectRuns, logger: logger)
        let timeouts = HTTPTimeouts(
            headerSeconds: configuration.httpHeaderTimeoutSeconds, bodySeconds: configuration.httpBodyTimeoutSeconds,
            idleSeconds: configuration.httpIdleTimeoutSeconds)
        let http1Configuration = HTTP1Channel.Configuration(
            // An autoclosure: new handlers for every connection.
            additionalChannelHandlers: timeouts.handlers()
                + [
                    ExpectContinueHandler(requestBytesMax: configuration.requestBytesMax), ConnectionEndWatcher(),
                    RESTWriteAtOnceHandler(responder: responder, serverName: Self.serverName),
                ])
        // The HTTP port takes the native protocol too (`HTTPOrNativeChannel`), where this node
        // takes writes. A follower's, or a cluster node's that is not the leader, is HTTP only:
        // it redirects writes to the leader, which a client's REST fallback follows.
        let takesWrites: Bool
        if case .leader = replication, run?.writeRedirect == nil { takesWrites = true } else { takesWrites = false }
        let httpNative =
            takesWrites
            ? NativeConnectionSetup(
                data: data, outstandingMax: configuration.streamBufferBatches, outstandingBytesMax: configuration.streamBufferBytes,
                budget: streamBudget, replication: replication, doorbells: doorbells, authenticator: authenticator,
                onDisconnectRuns: onDisconnectRuns, subscriptionBounds: subscriptionBounds, frameIntake: frameIntake, logger: logger) : nil
        let http1 = HTTPServerBuilder { responder in
            let http = HTTP1Channel(responder: responder, configuration: http1Configuration)
            guard let httpNative else { return HTTP1ChannelAnswering10(http: http) }
            return HTTPOrNativeChannel(http: http, native: httpNative, silenceSeconds: Int64(configuration.httpIdleTimeoutSeconds))
        }
        let app = Application(
            responder: responder,
            server: tls == nil ? http1 : try .tls(http1, tlsConfiguration: tls!),
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.httpHost, port: configuration.httpPort), serverName: Self.serverName,
                backlog: ListenBacklog.connections,
                availableConnectionsDelegate: HTTPConnectionCap(
                    max: HTTPConnectionCap.fitting(configuration.httpConnectionsMax, logger: logger), logger: logger)),
            onServerRunning: { channel in
                // Ready means every socket accepts connections, not only HTTP.
                guard await bound.wait() else { return }
                let address = channel.localAddress.map { "\($0.ipAddress ?? configuration.httpHost):\($0.port ?? 0)" } ?? "?"
                onListening(address, nativeTCPAddress.value)
                SystemdNotifier.notify("READY=1")
            },
            logger: logger
        )
        // Graceful shutdown stops them last to first: HTTP, the metrics listener, retention,
        // the native sockets (their onDisconnect writes run), replication (a leader's log server
        // lets its followers apply every write first), and only then the databases.
        var services: [any Service] = [DataDirectoryService(data: data)]
        for service in replicationServices { services.append(service) }
        services.append(
            NativeServerService(
                address: .unix(configuration.effectiveSocketPath), data: data, outstandingMax: configuration.streamBufferBatches,
                outstandingBytesMax: configuration.streamBufferBytes, budget: streamBudget, replication: replication, doorbells: doorbells,
                authenticator: authenticator, onDisconnectRuns: onDisconnectRuns, subscriptionBounds: subscriptionBounds, frameIntake: frameIntake,
                logger: logger, bound: bound))
        for service in nativeTCP { services.append(service) }
        services.append(retention)
        services.append(
            ReloadService(started: configuration, control: logLevel, certificate: certificate, authenticator: authenticator, data: data, logger: logger))
        for service in metricsListener { services.append(service) }
        services.append(app)
        // A service that ends or fails (a follower's namespace that needs a restart to be
        // bootstrapped, a listener that failed) shuts the others down as SIGTERM does, in the
        // same order, and the daemon then exits with its error. Cancelling the group instead
        // left it waiting on services that stop only gracefully.
        let configured = services.map {
            ServiceGroupConfiguration.ServiceConfiguration(
                service: $0, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: configured, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            if let run {
                async let stopped: Void = run.started(group)
                do {
                    try await group.run()
                } catch {
                    run.finished()
                    await stopped
                    throw error
                }
                run.finished()
                await stopped
            } else {
                try await group.run()
            }
        } catch {
            data.close()
            throw error
        }
        SystemdNotifier.notify("STOPPING=1")
        data.close()
        logger.info("eddyd stopped")
    }
}
