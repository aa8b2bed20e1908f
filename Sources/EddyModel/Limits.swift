// Every limit Eddy enforces, in one place, each with the reason it exists.
// `LimitsTests` checks the relationships between them; `ServeConfiguration.validate()` checks
// the configurable ones again at startup.

public enum Limits {
    /// Firebase's "Depth of child nodes: 32" (Limits page; firebase-js-sdk `MAX_PATH_DEPTH`):
    /// a written leaf is at most 32 keys below the root, counting the keys inside the written
    /// value. Also bounds every walk over a stored tree and, with `keyBytesMax`, the length of
    /// every tree key (at most 32 x 770 encoded bytes).
    public static let pathDepthMax = 32
    /// Firebase's "Length of a key: 768 bytes" (Limits page), UTF-8, per key. There is no limit
    /// on a whole path's length: a 768-byte key may sit under any parent (the JS SDK's own
    /// 768-byte whole-path check is a client rule the server does not apply).
    public static let keyBytesMax = 768
    /// Firebase's largest string leaf (`MAX_LEAF_SIZE_ = 10 * 1024 * 1024`).
    public static let stringBytesMax = 10 * 1024 * 1024
    /// Firebase's "Size of the rules: 256 KB" (Limits page, Security Rules): the largest rules
    /// document, as sent (comments included) or, given as a value, as compact JSON. Compiling
    /// one runs on the threads every request shares; a 28 MB document held one for 137 s.
    public static let rulesDocumentBytesMax = 256 * 1024
    /// JSON nesting accepted by the parser before path validation; anything deeper than this
    /// cannot be written anyway, so the parser stops early instead of recursing further.
    public static let jsonDepthMax = 64
    /// Largest HTTP request body by default (`--request-bytes-max`): Firebase's 256 MB per REST
    /// write. Bodies in flight together are bounded by `--request-bodies-bytes-total`.
    public static let requestBytesDefault = 256 * 1024 * 1024
    /// Upper bound for `--request-bytes-max`.
    public static let requestBytesMax = 256 * 1024 * 1024
    /// Writes waiting for the committer. A write arriving at a full queue is refused with
    /// `busy` (HTTP 503) before anything is applied, so the caller can retry; nothing queued is
    /// ever dropped.
    public static let commitQueueCountMax = 4096
    /// Writes applied in one group commit (one synced RocksDB write).
    public static let commitGroupCountMax = 512
    /// Approximate bytes of values in one group commit: a group stops growing once it holds
    /// this much (a single larger write still commits alone). Bounds the batch's memory.
    public static let commitGroupBytesMax = 64 * 1024 * 1024
    /// Paths in one multi-path update (PATCH). Bounds the ancestor check and the log entry.
    public static let updatePathsCountMax = 10_000
    /// Reads waiting for or running on a database's reader threads; more are refused with
    /// `busy` (HTTP 503) instead of queueing without bound.
    public static let readQueueCountMax = 4096
    /// Log entries returned by one `Engine.logEntries(after:limit:)` call.
    public static let logReadCountMax = 10_000
    /// Namespaces (databases) one daemon keeps open at once; each has its own RocksDB and
    /// committer thread.
    public static let namespacesOpenMax = 64
    /// Bytes of a namespace name (`?ns=`). Names are directory names under the data directory.
    public static let namespaceBytesMax = 63
    /// JSON bytes up to which an index entry carries a copy of its child,
    /// so a query answers from the index alone. Larger children are read from the tree.
    /// Bounds the extra bytes an index adds per write.
    public static let indexCoverBytesMax = 4096
    /// Leaves read to re-cover a child after a write deep inside it; a child with more leaves is
    /// not covered (its entry points to the tree), so a small update never rereads a huge child.
    public static let indexCoverLeavesMax = 256
    /// Indexes (`.indexOn` entries) per database: each costs work on every write that touches its
    /// locations.
    public static let indexCountMax = 64
    /// Bytes of one log entry: a write's resolved value and the before-image of everything it
    /// replaces. A write whose entry would be larger is refused with `limitExceeded` and
    /// nothing of it is applied: every entry must fit one replication frame
    /// (`Frame.fromServerBytesMax`, 1 GiB, less room for the frame's own bytes), or followers
    /// could never apply it. Reached by replacing or removing a very large subtree at once;
    /// Firebase likewise asks for large deletes in parts.
    public static let logEntryBytesMax = (1 << 30) - (1 << 20)
    /// Subscriptions and tails one native connection may hold open at once by default
    /// (`--subscriptions-per-connection-max`); more are refused with `limitExceeded`. Each
    /// costs the server about 1.3 KiB with nothing at its location (more with a value it keeps
    /// for child events), so one client cannot grow the daemon without bound. Firebase's SDKs
    /// hold one listen per observed query: far fewer.
    public static let subscriptionsPerConnectionMax = 100_000
    /// Native subscriptions open at once across every connection of the daemon by default
    /// (`--subscriptions-max`; about 1.3 GiB at the cost above); more are refused with
    /// `limitExceeded`. Event streams (SSE) are bounded by `--http-connections-max` instead,
    /// one per connection.
    public static let subscriptionsMax = 1_000_000
    /// How long a query waits for the index it needs to finish building before answering
    /// `unavailable` (HTTP 503) with the build's progress.
    public static let indexWaitSecondsMax = 5.0
}
