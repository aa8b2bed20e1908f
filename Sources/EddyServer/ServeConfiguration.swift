// The effective configuration of `eddyd serve`: defaults, then the config file, then flags.
// Every option: meaning, unit, default (also in `eddyd serve --help` and README).

import EddyEngine
import Foundation
import EddyModel
import EddyReplication

public struct ServeConfiguration: Sendable, Equatable {
    /// Directory holding one RocksDB database per namespace. Default `./data`.
    public var dataDirectory = "./data"
    /// HTTP listen address. Default 127.0.0.1:9000 (the Firebase emulator's).
    public var httpHost = "127.0.0.1"
    public var httpPort = 9000
    /// Native protocol Unix socket (mode 0660).
    /// Default `<data>/eddyd.sock`.
    public var socketPath: String? = nil
    /// The leader's log server socket, where followers connect (mode 0660); not opened by a
    /// follower. Default `<data>/replication.sock`.
    public var replicationSocketPath: String? = nil
    /// A TCP address (HOST:PORT) where the leader's log server also listens, for followers on
    /// other machines. Nil (default): the Unix socket only.
    public var replicationListen: String? = nil
    /// Also serve the native protocol over TCP at HOST:PORT (no TLS, no authentication yet).
    public var nativeListen: String? = nil
    /// Set by `eddyd follow --leader`: the leader's replication socket path, or HOST:PORT of its
    /// `--replication-listen`. Nil: this daemon leads.
    public var leader: String? = nil
    /// How this follower names itself to the leader (status, logs). Default
    /// `<host name>:<absolute data directory>`.
    public var followerName: String? = nil
    /// `--cluster NAME` with `--etcd`: the role (leader or follower) comes from an election on
    /// etcd and changes with it (see ClusterRunner). Nil (default): no cluster.
    public var cluster: String? = nil
    /// etcd endpoints of the cluster (`http://HOST:PORT`).
    public var etcdEndpoints: [String] = []
    /// This node's id in the cluster: unique, stable across restarts. Default: the host name.
    public var nodeID: String? = nil
    /// The leader lease's time to live (seconds): how long a dead leader holds the cluster
    /// without writes, and how soon a leader cut off from etcd stops taking them. Default 5.
    public var leaseTTLSeconds = 5
    /// The URL other nodes redirect writes to (`307`). Default: http://<--http host:port>.
    public var advertiseHTTP: String? = nil
    /// When a write is acknowledged; see `Durability`. Default `sync`.
    public var durability: Durability = .sync
    /// Largest accepted request body in bytes. Default and most 256 MiB (Firebase's REST limit).
    public var requestBytesMax = Limits.requestBytesDefault
    /// Bytes of request bodies all HTTP clients together may have in flight (received and not
    /// yet applied); a body past it is refused with 503, nothing applied. At least
    /// `requestBytesMax`. Default 1 GiB.
    public var requestBodiesBytesTotal = 1 << 30
    /// Children an online index build indexes per step (between write groups). Default 4096.
    public var indexBuildChunk = 4096
    /// Milliseconds between index build steps, to throttle builds on a busy server. Default 0.
    public var indexBuildPauseMilliseconds = 0
    /// Seconds between keep-alive events on an event stream (SSE), whether or not events flowed. Default 10:
    /// firebase-admin's `ListenerRegistration.close()` returns only at the stream's next byte, so
    /// an idle stream's close takes up to this long (30 s before); a lost client of an
    /// onDisconnect connection is also found by the keep-alive write that fails.
    public var sseKeepAliveSeconds = 10
    /// Event batches (one per log entry) an event stream may fall behind before it is cut off
    /// with `cancel` and the id to resume after. Default 8192: about a second of a busy location
    /// (a subscriber descheduled for a moment is not cut off and made to resume); the bytes
    /// bounds below are what bound memory (each stream also stops at 16 MiB).
    public var streamBufferBatches = 8192
    /// Bytes of events one SSE stream or native subscriber may have waiting (not yet written to
    /// its socket) before it is cut off with the id to resume after. One batch always gets
    /// through to a client with nothing waiting. Default 16 MiB.
    public var streamBufferBytes = 16 << 20
    /// Bytes of events all streams and subscribers together may have waiting: past it, the one
    /// adding more is cut off like one over its own bound. Bounds what stalled clients can hold
    /// whatever their number. Default 256 MiB.
    public var streamBuffersBytesTotal = 256 << 20
    /// Writes are refused with 507 while the data volume has less than this many bytes free,
    /// and resume by themselves once it has more; 0 turns the check off. Default 64 MiB.
    public var diskReserveBytes = 64 << 20
    /// Bytes of RocksDB block cache (uncompressed data, index and filter blocks) all open
    /// namespaces share: one cache, so this bounds them together however many are open. Reads
    /// of blocks not in it go to the OS page cache and decompress. Default 256 MiB.
    public var blockCacheBytes = 256 << 20
    /// Seconds a request's head may take from its first byte (then 408 and close). Default 10.
    public var httpHeaderTimeoutSeconds = 10
    /// Seconds a request body may stall (no bytes while more are owed; then 408 and close).
    /// Default 30.
    public var httpBodyTimeoutSeconds = 30
    /// Seconds a connection may sit with no request and no answer in progress before it is
    /// closed. Default 120. (Responses in progress, such as event streams, never time out.)
    public var httpIdleTimeoutSeconds = 120
    /// Open HTTP connections at most; at the cap new ones wait in the listen backlog (and the
    /// daemon logs it). Default 10000, lowered at start to fit the file-descriptor limit.
    public var httpConnectionsMax = 10_000
    /// Subscriptions and tails one native connection may hold open; more are refused with
    /// `limitExceeded`. Default 100000 (`Limits.subscriptionsPerConnectionMax`).
    public var subscriptionsPerConnectionMax = Limits.subscriptionsPerConnectionMax
    /// Native subscriptions open at once across the daemon; more are refused with
    /// `limitExceeded`. Default 1000000 (`Limits.subscriptionsMax`).
    public var subscriptionsMax = Limits.subscriptionsMax
    /// Log retention (see `LogRetention`): entries older than this many seconds are pruned.
    /// Default 604800 (7 days).
    public var logRetainSeconds = 604_800
    /// Entries beyond the newest this many bytes of log are pruned. Default 1 GiB.
    public var logRetainBytes = 1 << 30
    /// Above this many bytes, entries are pruned even when a connected follower still needs them.
    /// Default 8 GiB.
    public var logRetainBytesMax = 8 << 30
    /// Milliseconds between retention checks. Default 10000.
    public var logRetentionCheckMilliseconds = 10_000
    /// With N > 0, a write is acknowledged only after N connected followers applied it (and
    /// fails with `unavailable` when that takes longer than `syncFollowersTimeoutMilliseconds`;
    /// the write stays committed on the leader). Default 0.
    public var syncFollowers = 0
    /// How long a write waits for `syncFollowers` followers. Default 5000.
    public var syncFollowersTimeoutMilliseconds = 5000
    /// A new follower (an empty replica) of a log holding at least this many entries starts from
    /// a snapshot of the leader instead of replaying them (0: only when the log was pruned past
    /// what it needs). Default 50000.
    public var snapshotBootstrapEntries = LogServerService.snapshotBootstrapEntriesDefault
    /// Open connections to the leader's replication listeners at most (both together); more are
    /// refused with reason `busy` (see `ReplicationConnectionCap`). Default 256.
    public var replicationConnectionsMax = ReplicationConnectionCap.maxDefault
    /// swift-log level: trace, debug, info, notice, warning, error, critical. Default info.
    public var logLevel = "info"
    /// Listen beyond loopback although no authentication is configured: anyone who reaches a
    /// port reads and writes everything. Off: such a start is refused.
    public var insecureNoAuth = false
    /// A file holding the admin secret (`Authorization: Bearer <secret>` bypasses the rules).
    public var adminTokenFile: String? = nil
    /// A file holding the HS256 secret of operator-issued ID tokens (`eddy token`).
    public var jwtSecretFile: String? = nil
    /// A file with RS256 public keys: Firebase's x509 map `{kid: PEM}` or a JWKS.
    public var jwtKeysFile: String? = nil
    /// The project id tokens must name (`aud`; `iss` is https://securetoken.google.com/<it>).
    /// Default "eddy".
    public var projectID = "eddy"
    /// Host names accepted in HTTP `Host` besides IP literals and localhost.
    public var allowedHosts: [String] = []
    /// Browser origins answered with CORS headers (`*`: any).
    public var corsOrigins: [String] = []
    /// A file holding the secret followers must present to the log server; nil: the log server
    /// takes followers on its Unix socket only by file mode, and refuses TCP followers.
    public var replicationSecretFile: String? = nil

    /// PEM certificate chain and private key: TLS on the HTTP, `--native-listen` and
    /// `--replication-listen` listeners (Unix sockets stay plain). Both or neither.
    public var tlsCertificateFile: String? = nil
    public var tlsKeyFile: String? = nil
    /// PEM CA bundle a follower verifies its HOST:PORT leader's certificate against (TLS to
    /// the leader); nil: plain.
    public var tlsCAFile: String? = nil
    /// HOST:PORT of a listener that serves `/metrics` (and the health probes) with no
    /// credential; nil: none (the HTTP listener serves `/metrics` to the admin).
    public var metricsListen: String? = nil
    /// A JSON rules document (`{"rules": {...}}`) the default namespace's rules are set to at
    /// start and on SIGHUP (rules kept as a file, e.g. under /etc/eddy). A leader's only: a
    /// follower takes its leader's rules. nil: the rules are whatever was last set.
    public var rulesFile: String? = nil
    /// The `--config` file these options came from (reread on SIGHUP); nil: none.
    public var configFile: String? = nil
    /// One info line per HTTP request: method, path (no query string), status, milliseconds.
    public var logRequests = false
    /// `/.health/ready` fails on a follower whose replica is further behind than this. Default 10.
    public var readyLagMaxSeconds = 10

    /// True when an admin secret or token keys are configured.
    public var authConfigured: Bool { self.adminTokenFile != nil || self.jwtSecretFile != nil || self.jwtKeysFile != nil }

    /// Firebase emulator conventions (`Bearer owner` is the admin, `auth_variable_override`,
    /// open default rules): no admin secret, and every listener on loopback (or insisted).
    public var emulatorConventions: Bool {
        self.adminTokenFile == nil && (self.insecureNoAuth || self.tcpListeners.allSatisfy { Self.isLoopback($0.1) })
    }

    public init() {}

    /// The range `blockCacheBytes` must be in: 1 MiB to 1 TiB.
    public static let blockCacheBytesMin = 1 << 20
    public static let blockCacheBytesMax = 1 << 40

    public var effectiveSocketPath: String { self.socketPath ?? self.dataDirectory + "/eddyd.sock" }
    public var effectiveReplicationSocketPath: String { self.replicationSocketPath ?? self.dataDirectory + "/replication.sock" }

    /// Checks every value; the message names the option, the value and the allowed range.
    public func validate() throws(EddyError) {
        guard (0...65535).contains(self.httpPort) else {
            throw EddyError(.invalidArgument, "http port \(self.httpPort) is out of range 0...65535")
        }
        guard !self.httpHost.isEmpty else { throw EddyError(.invalidArgument, "http host is empty") }
        guard (1024...Limits.requestBytesMax).contains(self.requestBytesMax) else {
            throw EddyError(
                .invalidArgument,
                "request-bytes-max \(self.requestBytesMax) is out of range 1024...\(Limits.requestBytesMax)")
        }
        guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(self.logLevel) else {
            throw EddyError(.invalidArgument, "log-level \(self.logLevel) is not one of trace, debug, info, notice, warning, error, critical")
        }
        guard (1...1_000_000).contains(self.indexBuildChunk) else {
            throw EddyError(.invalidArgument, "index-build-chunk \(self.indexBuildChunk) is out of range 1...1000000 (children)")
        }
        guard (0...60_000).contains(self.indexBuildPauseMilliseconds) else {
            throw EddyError(
                .invalidArgument, "index-build-pause-ms \(self.indexBuildPauseMilliseconds) is out of range 0...60000 (milliseconds)")
        }
        guard (1...3600).contains(self.sseKeepAliveSeconds) else {
            throw EddyError(.invalidArgument, "sse-keep-alive-seconds \(self.sseKeepAliveSeconds) is out of range 1...3600 (seconds)")
        }
        guard (1...1_000_000).contains(self.streamBufferBatches) else {
            throw EddyError(.invalidArgument, "stream-buffer-batches \(self.streamBufferBatches) is out of range 1...1000000")
        }
        for (name, seconds) in [
            ("http-header-timeout-seconds", self.httpHeaderTimeoutSeconds), ("http-body-timeout-seconds", self.httpBodyTimeoutSeconds),
            ("http-idle-timeout-seconds", self.httpIdleTimeoutSeconds),
        ] {
            guard (1...86_400).contains(seconds) else {
                throw EddyError(.invalidArgument, "\(name) \(seconds) is out of range 1...86400 (seconds)")
            }
        }
        guard self.diskReserveBytes >= 0 else {
            throw EddyError(.invalidArgument, "disk-reserve-bytes \(self.diskReserveBytes) must be at least 0 (bytes; 0 turns the check off)")
        }
        guard (Self.blockCacheBytesMin...Self.blockCacheBytesMax).contains(self.blockCacheBytes) else {
            throw EddyError(
                .invalidArgument,
                "block-cache-bytes \(self.blockCacheBytes) is out of range \(Self.blockCacheBytesMin)...\(Self.blockCacheBytesMax) (bytes: 1 MiB to 1 TiB)")
        }
        guard (1...100_000).contains(self.replicationConnectionsMax) else {
            throw EddyError(.invalidArgument, "replication-connections-max \(self.replicationConnectionsMax) is out of range 1...100000")
        }
        guard (1...1_000_000).contains(self.httpConnectionsMax) else {
            throw EddyError(.invalidArgument, "http-connections-max \(self.httpConnectionsMax) is out of range 1...1000000")
        }
        guard (1...100_000_000).contains(self.subscriptionsPerConnectionMax) else {
            throw EddyError(
                .invalidArgument, "subscriptions-per-connection-max \(self.subscriptionsPerConnectionMax) is out of range 1...100000000")
        }
        guard (1...100_000_000).contains(self.subscriptionsMax) else {
            throw EddyError(.invalidArgument, "subscriptions-max \(self.subscriptionsMax) is out of range 1...100000000")
        }
        guard ((64 << 10)...(1 << 30)).contains(self.streamBufferBytes) else {
            throw EddyError(.invalidArgument, "stream-buffer-bytes \(self.streamBufferBytes) is out of range 65536...1073741824 (bytes)")
        }
        guard (self.requestBytesMax...(64 << 30)).contains(self.requestBodiesBytesTotal) else {
            throw EddyError(
                .invalidArgument,
                "request-bodies-bytes-total \(self.requestBodiesBytesTotal) is out of range \(self.requestBytesMax) (request-bytes-max)...68719476736 (bytes)")
        }
        // May be below stream-buffer-bytes: then it is the bound that bites first.
        guard ((64 << 10)...(64 << 30)).contains(self.streamBuffersBytesTotal) else {
            throw EddyError(
                .invalidArgument, "stream-buffers-bytes-total \(self.streamBuffersBytesTotal) is out of range 65536...68719476736 (bytes)")
        }
        guard !self.dataDirectory.isEmpty else { throw EddyError(.invalidArgument, "data directory is empty") }
        guard self.logRetainSeconds >= 0 else {
            throw EddyError(.invalidArgument, "log-retain-seconds \(self.logRetainSeconds) must be at least 0 (seconds)")
        }
        guard self.logRetainBytes >= 0, self.logRetainBytesMax >= self.logRetainBytes else {
            throw EddyError(
                .invalidArgument,
                "log-retain-bytes \(self.logRetainBytes) must be at least 0 and at most log-retain-bytes-max \(self.logRetainBytesMax)")
        }
        guard (10...3_600_000).contains(self.logRetentionCheckMilliseconds) else {
            throw EddyError(
                .invalidArgument, "log-retention-check-ms \(self.logRetentionCheckMilliseconds) is out of range 10...3600000 (milliseconds)")
        }
        guard (0...16).contains(self.syncFollowers) else {
            throw EddyError(.invalidArgument, "sync-followers \(self.syncFollowers) is out of range 0...16")
        }
        guard (1...600_000).contains(self.syncFollowersTimeoutMilliseconds) else {
            throw EddyError(
                .invalidArgument, "sync-followers-timeout-ms \(self.syncFollowersTimeoutMilliseconds) is out of range 1...600000 (milliseconds)")
        }
        guard self.snapshotBootstrapEntries >= 0 else {
            throw EddyError(.invalidArgument, "snapshot-bootstrap-entries \(self.snapshotBootstrapEntries) must be at least 0 (entries; 0: never)")
        }
        if self.rulesFile != nil, self.leader != nil {
            throw EddyError(.invalidArgument, "rules-file is for a leader; a follower takes its leader's rules")
        }
        if let listen = self.replicationListen { _ = try Self.parseHostPort(listen) }
        if let listen = self.nativeListen { _ = try Self.parseHostPort(listen) }
        if let listen = self.metricsListen { _ = try Self.parseHostPort(listen) }
        guard (1...86_400).contains(self.readyLagMaxSeconds) else {
            throw EddyError(.invalidArgument, "ready-lag-max-seconds \(self.readyLagMaxSeconds) is out of range 1...86400 (seconds)")
        }
        if !self.insecureNoAuth, !self.authConfigured {
            for (option, host) in self.tcpListeners where !Self.isLoopback(host) {
                throw EddyError(
                    .invalidArgument,
                    "--\(option) \(host) listens beyond this machine, and no authentication is configured: anyone who reaches the port could read and write everything. Configure --admin-token-file and/or --jwt-secret-file / --jwt-keys-file, listen on 127.0.0.1 (or a Unix socket), or pass --insecure-no-auth (TOML insecure-no-auth = true) to insist"
                )
            }
        }
        guard (self.tlsCertificateFile == nil) == (self.tlsKeyFile == nil) else {
            throw EddyError(.invalidArgument, "--tls-cert-file and --tls-key-file go together: give both, or neither for plain listeners")
        }
        if let listen = self.replicationListen, let (host, _) = try? Self.parseHostPort(listen), !Self.isLoopback(host),
            self.replicationSecretFile == nil, !self.insecureNoAuth
        {
            throw EddyError(
                .invalidArgument,
                "--replication-listen \(listen) hands the whole database to any peer: configure --replication-secret-file (on the leader and its followers), or pass --insecure-no-auth to insist")
        }
        if self.cluster != nil || !self.etcdEndpoints.isEmpty {
            guard self.cluster != nil, !self.etcdEndpoints.isEmpty else {
                throw EddyError(.invalidArgument, "--cluster and --etcd go together: name the cluster and its etcd endpoints")
            }
            guard self.leader == nil else {
                throw EddyError(.invalidArgument, "--cluster elects the leader through etcd: run `eddyd serve --cluster`, not `eddyd follow`")
            }
            guard (1...3600).contains(self.leaseTTLSeconds) else {
                throw EddyError(.invalidArgument, "lease-ttl-seconds \(self.leaseTTLSeconds) is out of range 1...3600 (seconds)")
            }
            guard self.advertiseHTTP != nil || self.httpPort != 0 else {
                throw EddyError(.invalidArgument, "--cluster with --http on port 0: give a fixed port or --advertise-http, so other nodes can redirect writes here")
            }
        }
        if self.leader != nil, self.syncFollowers > 0 {
            throw EddyError(.invalidArgument, "sync-followers applies to a leader; a follower takes no writes")
        }
    }

    /// Every TCP listener: (option name, host).
    public var tcpListeners: [(String, String)] {
        var listeners = [("http", self.httpHost)]
        if let listen = self.nativeListen, let (host, _) = try? Self.parseHostPort(listen) { listeners.append(("native-listen", host)) }
        if let listen = self.replicationListen, let (host, _) = try? Self.parseHostPort(listen) {
            listeners.append(("replication-listen", host))
        }
        return listeners
    }

    /// 127.0.0.0/8, ::1 and localhost: reachable from this machine only.
    public static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare == "localhost" || bare == "::1" || bare == "0:0:0:0:0:0:0:1" { return true }
        let parts = bare.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// The log retention policy these options describe.
    public var logRetention: LogRetention {
        var retention = LogRetention()
        retention.retainSeconds = Double(self.logRetainSeconds)
        retention.retainBytes = UInt64(self.logRetainBytes)
        retention.retainBytesMax = UInt64(self.logRetainBytesMax)
        return retention
    }

    /// A comma-separated list, trimmed, without empty items.
    public static func list(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// Parses `HOST:PORT` (IPv6 as `[::1]:9000`).
    public static func parseHostPort(_ text: String) throws(EddyError) -> (String, Int) {
        guard let colon = text.lastIndex(of: ":") else {
            throw EddyError(.invalidArgument, "address \"\(text)\" must be HOST:PORT, e.g. 127.0.0.1:9000")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port), !host.isEmpty else {
            throw EddyError(.invalidArgument, "address \"\(text)\" must be HOST:PORT with a port in 0...65535")
        }
        return (host, port)
    }

    /// Applies `key = value` pairs from a config file (keys as the long flag names).
    public mutating func apply(configFile values: [String: ConfigFile.Value], path: String) throws(EddyError) {
        for (key, value) in values {
            switch (key, value) {
            case ("data", .string(let s)): self.dataDirectory = s
            case ("http", .string(let s)): (self.httpHost, self.httpPort) = try Self.parseHostPort(s)
            case ("socket", .string(let s)): self.socketPath = s
            case ("replication-socket", .string(let s)): self.replicationSocketPath = s
            case ("replication-listen", .string(let s)): self.replicationListen = s
            case ("cluster", .string(let s)): self.cluster = s
            case ("etcd", .string(let s)): self.etcdEndpoints = Self.list(s)
            case ("node-id", .string(let s)): self.nodeID = s
            case ("lease-ttl-seconds", .integer(let n)): self.leaseTTLSeconds = n
            case ("advertise-http", .string(let s)): self.advertiseHTTP = s
            case ("cluster", _), ("etcd", _), ("node-id", _), ("advertise-http", _):
                throw EddyError(.invalidArgument, "\(path): \(key) must be a string")
            case ("lease-ttl-seconds", _):
                throw EddyError(.invalidArgument, "\(path): lease-ttl-seconds must be an integer")
            case ("native-listen", .string(let s)): self.nativeListen = s
            case ("insecure-no-auth", .bool(let b)), ("insecure_no_auth", .bool(let b)): self.insecureNoAuth = b
            case ("admin-token-file", .string(let s)), ("admin_token_file", .string(let s)): self.adminTokenFile = s
            case ("jwt-secret-file", .string(let s)), ("jwt_secret_file", .string(let s)): self.jwtSecretFile = s
            case ("jwt-keys-file", .string(let s)), ("jwt_keys_file", .string(let s)): self.jwtKeysFile = s
            case ("rules-file", .string(let s)), ("rules_file", .string(let s)): self.rulesFile = s
            case ("project-id", .string(let s)), ("project_id", .string(let s)): self.projectID = s
            case ("replication-secret-file", .string(let s)), ("replication_secret_file", .string(let s)): self.replicationSecretFile = s
            case ("tls-cert-file", .string(let s)), ("tls_cert_file", .string(let s)): self.tlsCertificateFile = s
            case ("tls-key-file", .string(let s)), ("tls_key_file", .string(let s)): self.tlsKeyFile = s
            case ("tls-ca-file", .string(let s)), ("tls_ca_file", .string(let s)): self.tlsCAFile = s
            case ("allowed-host", .string(let s)), ("allowed_host", .string(let s)): self.allowedHosts = Self.list(s)
            case ("cors-origin", .string(let s)), ("cors_origin", .string(let s)): self.corsOrigins = Self.list(s)
            case ("durability", .string(let s)):
                guard let d = Durability(rawValue: s) else {
                    throw EddyError(.invalidArgument, "\(path): durability \"\(s)\" is not one of sync, batched, none")
                }
                self.durability = d
            case ("request-bytes-max", .integer(let n)): self.requestBytesMax = n
            case ("log-level", .string(let s)): self.logLevel = s
            case ("index-build-chunk", .integer(let n)): self.indexBuildChunk = n
            case ("index-build-pause-ms", .integer(let n)): self.indexBuildPauseMilliseconds = n
            case ("sse-keep-alive-seconds", .integer(let n)): self.sseKeepAliveSeconds = n
            case ("stream-buffer-batches", .integer(let n)): self.streamBufferBatches = n
            case ("stream-buffer-bytes", .integer(let n)): self.streamBufferBytes = n
            case ("http-header-timeout-seconds", .integer(let n)): self.httpHeaderTimeoutSeconds = n
            case ("http-body-timeout-seconds", .integer(let n)): self.httpBodyTimeoutSeconds = n
            case ("http-idle-timeout-seconds", .integer(let n)): self.httpIdleTimeoutSeconds = n
            case ("http-connections-max", .integer(let n)): self.httpConnectionsMax = n
            case ("subscriptions-per-connection-max", .integer(let n)): self.subscriptionsPerConnectionMax = n
            case ("subscriptions-max", .integer(let n)): self.subscriptionsMax = n
            case ("disk-reserve-bytes", .integer(let n)): self.diskReserveBytes = n
            case ("block-cache-bytes", .integer(let n)): self.blockCacheBytes = n
            case ("stream-buffers-bytes-total", .integer(let n)): self.streamBuffersBytesTotal = n
            case ("request-bodies-bytes-total", .integer(let n)): self.requestBodiesBytesTotal = n
            case ("log-retain-seconds", .integer(let n)): self.logRetainSeconds = n
            case ("log-retain-bytes", .integer(let n)): self.logRetainBytes = n
            case ("log-retain-bytes-max", .integer(let n)): self.logRetainBytesMax = n
            case ("log-retention-check-ms", .integer(let n)): self.logRetentionCheckMilliseconds = n
            case ("sync-followers", .integer(let n)): self.syncFollowers = n
            case ("sync-followers-timeout-ms", .integer(let n)): self.syncFollowersTimeoutMilliseconds = n
            case ("snapshot-bootstrap-entries", .integer(let n)): self.snapshotBootstrapEntries = n
            case ("replication-connections-max", .integer(let n)): self.replicationConnectionsMax = n
            case ("metrics", .string(let s)): self.metricsListen = s
            case ("log-requests", .bool(let b)), ("log_requests", .bool(let b)): self.logRequests = b
            case ("ready-lag-max-seconds", .integer(let n)), ("ready_lag_max_seconds", .integer(let n)): self.readyLagMaxSeconds = n
            case ("index-build-chunk", _), ("index-build-pause-ms", _), ("sse-keep-alive-seconds", _), ("stream-buffer-batches", _),
                ("stream-buffer-bytes", _), ("stream-buffers-bytes-total", _), ("request-bodies-bytes-total", _), ("http-header-timeout-seconds", _),
                ("http-body-timeout-seconds", _), ("http-idle-timeout-seconds", _), ("http-connections-max", _), ("subscriptions-per-connection-max", _),
                ("subscriptions-max", _), ("disk-reserve-bytes", _),
                ("block-cache-bytes", _), ("log-retain-seconds", _), ("log-retain-bytes", _), ("log-retain-bytes-max", _), ("log-retention-check-ms", _),
                ("sync-followers", _), ("sync-followers-timeout-ms", _), ("snapshot-bootstrap-entries", _), ("replication-connections-max", _), ("ready-lag-max-seconds", _), ("ready_lag_max_seconds", _):
                throw EddyError(.invalidArgument, "\(path): \(key) must be an integer")
            case ("data", _), ("http", _), ("socket", _), ("replication-socket", _), ("replication-listen", _), ("durability", _),
                ("log-level", _), ("metrics", _):
                throw EddyError(.invalidArgument, "\(path): \(key) must be a string")
            case ("request-bytes-max", _):
                throw EddyError(.invalidArgument, "\(path): request-bytes-max must be an integer (bytes)")
            default:
                throw EddyError(
                    .invalidArgument,
                    "\(path): unknown option \"\(key)\"; known: data, http, socket, native-listen, replication-socket, replication-listen, durability, request-bytes-max, request-bodies-bytes-total, index-build-chunk, index-build-pause-ms, sse-keep-alive-seconds, stream-buffer-batches, stream-buffer-bytes, stream-buffers-bytes-total, http-header-timeout-seconds, http-body-timeout-seconds, http-idle-timeout-seconds, http-connections-max, subscriptions-per-connection-max, subscriptions-max, disk-reserve-bytes, block-cache-bytes, log-retain-seconds, log-retain-bytes, log-retain-bytes-max, log-retention-check-ms, sync-followers, sync-followers-timeout-ms, snapshot-bootstrap-entries, replication-connections-max, log-level, log-requests, metrics, ready-lag-max-seconds, admin-token-file, jwt-secret-file, jwt-keys-file, rules-file, project-id, replication-secret-file, tls-cert-file, tls-key-file, tls-ca-file, allowed-host, cors-origin, insecure-no-auth, cluster, etcd, node-id, lease-ttl-seconds, advertise-http"
                )
            }
        }
    }
}
