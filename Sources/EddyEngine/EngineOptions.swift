// Options of one engine (one database). Every field: meaning, unit, default, tradeoff.

import EddyModel
import EddyStorage

public enum Durability: String, Sendable, CaseIterable {
    /// Default. A write is acknowledged only after the group's WAL write is fsynced: an
    /// acknowledged write survives a crash or power loss.
    case sync
    /// Acknowledged after the WAL write reaches the OS; the WAL is fsynced at least every
    /// `batchedSyncInterval`. Survives a process crash; a power loss may lose the last interval.
    case batched
    /// No WAL: acknowledged after the memtable write. Data reaches disk at memtable flushes and
    /// at clean shutdown; a crash loses everything since. For tests and throwaway data.
    case none
}

public struct EngineOptions: Sendable {
    public var durability: Durability = .sync
    /// The namespace this engine serves: the `namespace` label of its metrics.
    public var namespace = "default"
    /// How often `batched` durability fsyncs the WAL. Default 100 ms.
    public var batchedSyncInterval: Duration = .milliseconds(100)
    /// Writes applied per group commit. Default `Limits.commitGroupCountMax` (512).
    public var commitGroupCountMax = Limits.commitGroupCountMax
    /// Bytes of one log entry (a write and the before-image of what it replaces); a larger write
    /// is refused with `limitExceeded`. Default `Limits.logEntryBytesMax` (1 GiB less 1 MiB, what
    /// one replication frame holds); lowered only by tests.
    public var logEntryBytesMax = Limits.logEntryBytesMax
    /// Writes waiting for the committer before new writes are refused with `busy`. Default 4096.
    public var commitQueueCountMax = Limits.commitQueueCountMax
    /// Threads serving reads (RocksDB calls may block, so they never run on an event loop).
    public var readerThreads = 2
    /// Children an online index build indexes per step. The committer runs one step between
    /// commit groups, so a larger chunk builds faster but delays writes longer. Default 4096.
    public var indexBuildChunkChildren = 4096
    /// Pause between index build steps (writes are served during it), to throttle builds on a
    /// busy database. Default 0.
    public var indexBuildPauseMilliseconds = 0
    /// Whether this engine advances online index builds. The offline `eddy` tools turn it off
    /// (except `eddy index build`), so inspecting a database does not change it.
    public var runIndexBuilds = true
    /// Set on a follower's replica: the leader it follows (as the operator named it). Writes and
    /// rules changes are then refused with `notLeader` naming it; entries arrive only through
    /// `Engine.applyReplicated`. Nil (default): a leader, which accepts writes.
    public var leader: String? = nil
    /// In a cluster (`eddyd serve --cluster`): the leadership term while this node provably
    /// holds the leader's lease, otherwise the error local writes and rules changes fail with
    /// (`notLeader`). Asked before a write is queued and again by the committer for every group,
    /// so nothing is applied once the lease is no longer proven; the group's entries carry the
    /// term it answered (a term older than the log's newest entry's is refused too). Nil
    /// (default): no cluster, no fence; local entries carry the newest entry's term.
    public var writeFence: (@Sendable () -> Result<UInt64, EddyError>)? = nil
    /// The rules of a database that has none stored (`Rules.default`, open, unless the server
    /// configures authentication: then `Rules.locked`).
    public var defaultRules: Rules = .default
    /// Local writes are refused with `insufficientStorage` while the data volume has less than
    /// this many bytes free (see `DiskSpaceReserve`); 0 turns the check off. Default 64 MiB.
    public var diskReserveBytes: UInt64 = 64 << 20
    /// The block cache this engine's database reads through, shared with the other engines
    /// given the same one (eddyd gives every namespace one cache of `--block-cache-bytes`).
    /// Nil (default): the database makes its own of 128 MiB (`StorageOptions.blockCacheBytes`).
    public var blockCache: BlockCache? = nil

    public init(durability: Durability = .sync) {
        self.durability = durability
    }
}
