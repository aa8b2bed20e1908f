// eddyd: the Eddy daemon. Parses the command line and hands over to EddyServer; nothing else.

import ArgumentParser
import EddyEngine
import EddyModel
import EddyServer
import Foundation
import Logging
import Metrics
import Prometheus

@main
struct Eddyd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "eddyd",
        abstract: "Eddy: a self-hosted realtime JSON database with the Firebase REST API.",
        subcommands: [Serve.self, Follow.self],
        defaultSubcommand: Serve.self
    )
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the databases in a data directory over HTTP (Firebase REST API).",
        discussion: """
            Options come from built-in defaults, then --config FILE, then flags (flags win).
            The config file takes the long option names as keys, e.g.
              data = "/var/lib/eddy"
              http = "127.0.0.1:9000"
              durability = "sync"
            SIGTERM or SIGINT stops accepting requests, commits every queued write, then exits.
            """
    )

    @Option(name: .long, help: "TOML config file (keys: the long option names). Default: none.")
    var config: String?

    @Option(name: .long, help: "Data directory, one database per namespace. Default: ./data")
    var data: String?

    @Option(name: .long, help: "HTTP listen address HOST:PORT (port 0 picks a free port). Default: 127.0.0.1:9000")
    var http: String?

    @Option(name: .long, help: "Native protocol Unix socket (mode 0660). Default: <data>/eddyd.sock")
    var socket: String?

    @Option(name: .customLong("replication-socket"), help: "Unix socket where followers connect (mode 0660; a leader only). Default: <data>/replication.sock")
    var replicationSocket: String?

    @Option(name: .customLong("native-listen"), help: "Also serve the native protocol over TCP at HOST:PORT (clients authenticate with an auth request; TLS with --tls-cert-file). Default: none")
    var nativeListen: String?

    @Option(name: .customLong("replication-listen"), help: "Also serve followers over TCP at HOST:PORT (TLS with --tls-cert-file, verified by followers with --tls-ca-file; --replication-secret-file beyond loopback). Default: none")
    var replicationListen: String?

    @Option(
        name: .long,
        help: "When writes are acknowledged: sync (fsync before ack), batched (fsync every 100 ms; a power loss may lose the last 100 ms), none (no WAL; tests only). Default: sync"
    )
    var durability: String?

    @Option(name: .customLong("request-bytes-max"), help: "Largest request body in bytes (1024 to 268435456). Default: 268435456 (256 MiB, Firebase's REST limit)")
    var requestBytesMax: Int?

    @Option(name: .customLong("index-build-chunk"), help: "Children an online index build indexes per step, between write groups (1 to 1000000). Default: 4096")
    var indexBuildChunk: Int?

    @Option(name: .customLong("index-build-pause-ms"), help: "Milliseconds between index build steps, to throttle builds (0 to 60000). Default: 0")
    var indexBuildPauseMilliseconds: Int?

    @Option(name: .customLong("sse-keep-alive-seconds"), help: "Seconds between keep-alive events on an event stream, sent on this period whether or not events flowed (1 to 3600; firebase-admin's listener close() waits for the next one). Default: 10")
    var sseKeepAliveSeconds: Int?

    @Option(name: .customLong("stream-buffer-batches"), help: "Event batches an event stream may fall behind before it is cut off with a resume id (1 to 1000000). Default: 8192")
    var streamBufferBatches: Int?

    @Option(name: .customLong("disk-reserve-bytes"), help: "Refuse writes (507) while the data volume has less than this free; they resume by themselves. 0: off. Default: 67108864")
    var diskReserveBytes: Int?

    @Option(name: .customLong("block-cache-bytes"), help: "Bytes of block cache all namespaces share (1 MiB to 1 TiB). Default: 268435456")
    var blockCacheBytes: Int?

    @Option(name: .customLong("http-header-timeout-seconds"), help: "Seconds a request head may take from its first byte; then 408 and close. Default: 10")
    var httpHeaderTimeoutSeconds: Int?

    @Option(name: .customLong("http-body-timeout-seconds"), help: "Seconds a request body may stall while more is owed; then 408 and close. Default: 30")
    var httpBodyTimeoutSeconds: Int?

    @Option(name: .customLong("http-idle-timeout-seconds"), help: "Seconds an HTTP connection may sit with no request or answer in progress. Default: 120")
    var httpIdleTimeoutSeconds: Int?

    @Option(name: .customLong("http-connections-max"), help: "Open HTTP connections at most; more wait in the listen backlog. Default: 10000 (lowered to fit the file-descriptor limit)")
    var httpConnectionsMax: Int?

    @Option(
        name: .customLong("subscriptions-per-connection-max"),
        help: "Subscriptions and tails one native connection may hold open; more are refused (limitExceeded). Default: 100000")
    var subscriptionsPerConnectionMax: Int?

    @Option(name: .customLong("subscriptions-max"), help: "Native subscriptions open at once across the daemon; more are refused (limitExceeded). Default: 1000000")
    var subscriptionsMax: Int?

    @Option(name: .customLong("stream-buffer-bytes"), help: "Bytes of events one SSE stream or native subscriber may have waiting before it is cut off with a resume id (65536 to 1073741824). Default: 16777216")
    var streamBufferBytes: Int?

    @Option(name: .customLong("request-bodies-bytes-total"), help: "Bytes of request bodies all HTTP clients together may have in flight; a body past it is refused with 503 (at least request-bytes-max). Default: 1073741824 (1 GiB)")
    var requestBodiesBytesTotal: Int?

    @Option(name: .customLong("stream-buffers-bytes-total"), help: "Bytes of events all streams and subscribers together may have waiting; past it, the one adding more is cut off. Default: 268435456")
    var streamBuffersBytesTotal: Int?

    @Option(name: .customLong("log-retain-seconds"), help: "Prune log entries older than this (seconds). Default: 604800 (7 days)")
    var logRetainSeconds: Int?

    @Option(name: .customLong("log-retain-bytes"), help: "Prune log entries beyond the newest this many bytes. Default: 1073741824 (1 GiB)")
    var logRetainBytes: Int?

    @Option(name: .customLong("log-retain-bytes-max"), help: "Above this, prune even entries a connected follower still needs (bytes). Default: 8589934592 (8 GiB)")
    var logRetainBytesMax: Int?

    @Option(name: .customLong("log-retention-check-ms"), help: "Milliseconds between log retention checks (10 to 3600000). Default: 10000")
    var logRetentionCheckMilliseconds: Int?

    @Option(name: .long, help: "Join the cluster NAME: the leader is elected through --etcd, the others follow it and take over when it dies. Default: none")
    var cluster: String?

    @Option(name: .long, help: "etcd endpoints of --cluster, comma-separated http://HOST:PORT. Default: none")
    var etcd: String?

    @Option(name: .customLong("node-id"), help: "This node's id in --cluster (unique, stable across restarts). Default: the host name")
    var nodeID: String?

    @Option(name: .customLong("lease-ttl-seconds"), help: "--cluster leader lease TTL: how long a dead leader holds the cluster without writes (1 to 3600). Default: 5")
    var leaseTTLSeconds: Int?

    @Option(name: .customLong("advertise-http"), help: "URL other --cluster nodes redirect writes to. Default: http://<--http>")
    var advertiseHTTP: String?

    @Option(name: .customLong("sync-followers"), help: "Acknowledge a write only after this many followers applied it (0 to 16). Default: 0")
    var syncFollowers: Int?

    @Option(name: .customLong("sync-followers-timeout-ms"), help: "How long a write waits for --sync-followers before failing (milliseconds). Default: 5000")
    var syncFollowersTimeoutMilliseconds: Int?

    @Option(name: .customLong("snapshot-bootstrap-entries"), help: "A new follower of a log with at least this many entries starts from a snapshot instead of replaying them (0: only when the log was pruned). Default: 50000")
    var snapshotBootstrapEntries: Int?

    @Option(name: .customLong("replication-connections-max"), help: "Open follower connections at most, both replication listeners together (a follower takes one per namespace it replicates); more are refused. Default: 256")
    var replicationConnectionsMax: Int?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical. Default: info")
    var logLevel: String?

    @Flag(
        name: .customLong("insecure-no-auth"),
        help: "Allow --http, --native-listen or --replication-listen on a non-loopback address with no authentication configured (anyone who reaches the port reads and writes everything). Default: refused")
    var insecureNoAuth = false

    @Option(name: .customLong("admin-token-file"), help: "File holding the admin secret: Authorization: Bearer <secret> bypasses the rules. Default: none (loopback emulator mode: Bearer owner)")
    var adminTokenFile: String?

    @Option(name: .customLong("jwt-secret-file"), help: "File holding the HS256 secret of ID tokens an operator mints (eddy token). Default: none")
    var jwtSecretFile: String?

    @Option(name: .customLong("jwt-keys-file"), help: "File with RS256 keys for Firebase ID tokens: the x509 map {kid: PEM} or a JWKS. Default: none")
    var jwtKeysFile: String?

    @Option(name: .customLong("rules-file"), help: "JSON rules document the default namespace's rules are set to at start and on SIGHUP. Default: none")
    var rulesFile: String?

    @Option(name: .customLong("project-id"), help: "Project id ID tokens must carry (aud; iss https://securetoken.google.com/<id>). Default: eddy")
    var projectID: String?

    @Option(name: .customLong("allowed-host"), help: "Comma-separated host names accepted in HTTP Host besides IP addresses, localhost and single-label names. Default: none")
    var allowedHost: String?

    @Option(name: .customLong("cors-origin"), help: "Comma-separated browser origins answered with CORS headers (* for any). Default: none")
    var corsOrigin: String?

    @Option(name: .customLong("tls-cert-file"), help: "PEM certificate chain: TLS on the HTTP, --native-listen and --replication-listen listeners (with --tls-key-file). Default: plain")
    var tlsCertFile: String?

    @Option(name: .customLong("tls-key-file"), help: "PEM private key of --tls-cert-file. Default: none")
    var tlsKeyFile: String?

    @Option(name: .customLong("tls-ca-file"), help: "PEM CA bundle a follower verifies its HOST:PORT leader's certificate against (TLS to the leader). Default: plain")
    var tlsCAFile: String?

    @Option(name: .customLong("replication-secret-file"), help: "File holding the secret followers present to the leader's log server (same file on both). Default: none")
    var replicationSecretFile: String?

    @Option(name: .customLong("metrics"), help: "HOST:PORT of a listener serving /metrics (Prometheus) and /.health/* with no credential. Default: none (the HTTP listener serves /metrics, to the admin once auth is configured)")
    var metrics: String?

    @Flag(name: .customLong("log-requests"), help: "Log one line per HTTP request: method, path, status, milliseconds. Default: off")
    var logRequests = false

    @Option(name: .customLong("ready-lag-max-seconds"), help: "/.health/ready fails on a follower further behind its leader than this (1 to 86400). Default: 10")
    var readyLagMaxSeconds: Int?

    func run() async throws {
        let configuration: ServeConfiguration
        do {
            configuration = try self.effectiveConfiguration()
        } catch {
            FileHandle.standardError.write(Data("eddyd: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
        try await Self.start(configuration)
    }

    static func start(_ configuration: ServeConfiguration) async throws {
        do {
            let level = LogLevelControl(Logger.Level(rawValue: configuration.logLevel) ?? .info)
            LoggingSystem.bootstrap { label in EddyLogHandler(label: label, control: level) }
            let logger = Logger(label: "eddyd")
            // One registry for the process: swift-metrics records into it, /metrics reads it.
            let registry = PrometheusCollectorRegistry()
            var factory = PrometheusMetricsFactory(registry: registry)
            // Commit, fsync and query times: 50 µs to 10 s.
            factory.defaultDurationHistogramBuckets = [
                .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
                .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
                .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(10),
            ]
            // Writes per commit group: 1 to the group cap.
            factory.defaultValueHistogramBuckets = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096]
            MetricsSystem.bootstrap(factory)
            if configuration.cluster != nil {
                try await ClusterRunner.run(configuration, logger: logger, metricsRegistry: registry, logLevel: level) { address, nativeTCP, role in
                    if let nativeTCP { FileHandle.standardOutput.write(Data("eddyd: native protocol on tcp://\(nativeTCP)\n".utf8)) }
                    let scheme = configuration.tlsCertificateFile == nil ? "http" : "https"
                    let line = "eddyd: listening on \(scheme)://\(address) (data \(configuration.dataDirectory), durability \(configuration.durability.rawValue), \(role))\n"
                    FileHandle.standardOutput.write(Data(line.utf8))
                }
                return
            }
            try await EddyServer.serve(configuration, logger: logger, metricsRegistry: registry, logLevel: level) { address, nativeTCP in
                let role = configuration.leader.map { ", following \($0)" } ?? ""
                // The native TCP line comes first: a reader that waits for the HTTP line has both.
                if let nativeTCP { FileHandle.standardOutput.write(Data("eddyd: native protocol on tcp://\(nativeTCP)\n".utf8)) }
                let scheme = configuration.tlsCertificateFile == nil ? "http" : "https"
                let line = "eddyd: listening on \(scheme)://\(address) (data \(configuration.dataDirectory), durability \(configuration.durability.rawValue)\(role))\n"
                FileHandle.standardOutput.write(Data(line.utf8))
            }
        } catch let error as EddyError {
            FileHandle.standardError.write(Data("eddyd: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }

    func effectiveConfiguration() throws(EddyError) -> ServeConfiguration {
        var configuration = ServeConfiguration()
        if let config {
            let text: String
            do {
                text = try String(contentsOfFile: config, encoding: .utf8)
            } catch {
                throw EddyError(.invalidArgument, "cannot read config file \(config): \(error.localizedDescription)")
            }
            try configuration.apply(configFile: ConfigFile.parse(text, path: config), path: config)
            configuration.configFile = config
        }
        if let data { configuration.dataDirectory = data }
        if let http { (configuration.httpHost, configuration.httpPort) = try ServeConfiguration.parseHostPort(http) }
        if let socket { configuration.socketPath = socket }
        if let replicationSocket { configuration.replicationSocketPath = replicationSocket }
        if let replicationListen { configuration.replicationListen = replicationListen }
        if let cluster { configuration.cluster = cluster }
        if let etcd { configuration.etcdEndpoints = ServeConfiguration.list(etcd) }
        if let nodeID { configuration.nodeID = nodeID }
        if let leaseTTLSeconds { configuration.leaseTTLSeconds = leaseTTLSeconds }
        if let advertiseHTTP { configuration.advertiseHTTP = advertiseHTTP }
        if let nativeListen { configuration.nativeListen = nativeListen }
        if insecureNoAuth { configuration.insecureNoAuth = true }
        if let adminTokenFile { configuration.adminTokenFile = adminTokenFile }
        if let jwtSecretFile { configuration.jwtSecretFile = jwtSecretFile }
        if let jwtKeysFile { configuration.jwtKeysFile = jwtKeysFile }
        if let rulesFile { configuration.rulesFile = rulesFile }
        if let projectID { configuration.projectID = projectID }
        if let allowedHost { configuration.allowedHosts = ServeConfiguration.list(allowedHost) }
        if let corsOrigin { configuration.corsOrigins = ServeConfiguration.list(corsOrigin) }
        if let replicationSecretFile { configuration.replicationSecretFile = replicationSecretFile }
        if let tlsCertFile { configuration.tlsCertificateFile = tlsCertFile }
        if let tlsKeyFile { configuration.tlsKeyFile = tlsKeyFile }
        if let tlsCAFile { configuration.tlsCAFile = tlsCAFile }
        if let metrics { configuration.metricsListen = metrics }
        if logRequests { configuration.logRequests = true }
        if let readyLagMaxSeconds { configuration.readyLagMaxSeconds = readyLagMaxSeconds }
        if let durability {
            guard let d = Durability(rawValue: durability) else {
                throw EddyError(.invalidArgument, "--durability \(durability) is not one of sync, batched, none")
            }
            configuration.durability = d
        }
        if let requestBytesMax { configuration.requestBytesMax = requestBytesMax }
        if let logLevel { configuration.logLevel = logLevel }
        if let indexBuildChunk { configuration.indexBuildChunk = indexBuildChunk }
        if let sseKeepAliveSeconds { configuration.sseKeepAliveSeconds = sseKeepAliveSeconds }
        if let streamBufferBatches { configuration.streamBufferBatches = streamBufferBatches }
        if let streamBufferBytes { configuration.streamBufferBytes = streamBufferBytes }
        if let httpHeaderTimeoutSeconds { configuration.httpHeaderTimeoutSeconds = httpHeaderTimeoutSeconds }
        if let httpBodyTimeoutSeconds { configuration.httpBodyTimeoutSeconds = httpBodyTimeoutSeconds }
        if let httpIdleTimeoutSeconds { configuration.httpIdleTimeoutSeconds = httpIdleTimeoutSeconds }
        if let httpConnectionsMax { configuration.httpConnectionsMax = httpConnectionsMax }
        if let subscriptionsPerConnectionMax { configuration.subscriptionsPerConnectionMax = subscriptionsPerConnectionMax }
        if let subscriptionsMax { configuration.subscriptionsMax = subscriptionsMax }
        if let diskReserveBytes { configuration.diskReserveBytes = diskReserveBytes }
        if let blockCacheBytes { configuration.blockCacheBytes = blockCacheBytes }
        if let streamBuffersBytesTotal { configuration.streamBuffersBytesTotal = streamBuffersBytesTotal }
        if let requestBodiesBytesTotal { configuration.requestBodiesBytesTotal = requestBodiesBytesTotal }
        if let indexBuildPauseMilliseconds { configuration.indexBuildPauseMilliseconds = indexBuildPauseMilliseconds }
        if let logRetainSeconds { configuration.logRetainSeconds = logRetainSeconds }
        if let logRetainBytes { configuration.logRetainBytes = logRetainBytes }
        if let logRetainBytesMax { configuration.logRetainBytesMax = logRetainBytesMax }
        if let logRetentionCheckMilliseconds { configuration.logRetentionCheckMilliseconds = logRetentionCheckMilliseconds }
        if let syncFollowers { configuration.syncFollowers = syncFollowers }
        if let syncFollowersTimeoutMilliseconds { configuration.syncFollowersTimeoutMilliseconds = syncFollowersTimeoutMilliseconds }
        if let snapshotBootstrapEntries { configuration.snapshotBootstrapEntries = snapshotBootstrapEntries }
        if let replicationConnectionsMax { configuration.replicationConnectionsMax = replicationConnectionsMax }
        try configuration.validate()
        return configuration
    }
}


struct Follow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve a read-only replica of every namespace of a leader, kept current from its log.",
        discussion: """
            Connects to the leader's replication socket (or HOST:PORT of its --replication-listen), \
            applies every log entry after the last one applied here, then follows the live log; \
            reconnects with backoff when the leader goes away. A new replica, or one that needs \
            entries the leader's log no longer has, first bootstraps from a snapshot.

            Serves reads, queries, event streams and native subscriptions like the leader; writes \
            and rules changes are refused with an error naming the leader. Takes the same options \
            as `serve`.
            """
    )

    @Option(name: .long, help: "The leader's replication socket (its <data>/replication.sock), or HOST:PORT of its --replication-listen.")
    var leader: String

    @Option(name: .long, help: "How this follower names itself to the leader. Default: <host>:<absolute data dir>")
    var name: String?

    @OptionGroup var serve: Serve

    func run() async throws {
        var configuration: ServeConfiguration
        do {
            configuration = try self.serve.effectiveConfiguration()
        } catch {
            FileHandle.standardError.write(Data("eddyd: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
        configuration.leader = self.leader
        configuration.followerName = self.name
        try await Serve.start(configuration)
    }
}
