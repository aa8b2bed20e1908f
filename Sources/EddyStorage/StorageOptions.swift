// Options for opening a RocksDB database. Every field states its unit and default.

public struct StorageOptions: Sendable {
    /// RocksDB's compact-on-deletion collector, for every column family: a file in which some
    /// `deletionWindowEntries` consecutive records hold `deletionTriggerEntries` deletions is
    /// marked for compaction (a removed subtree's tombstones then go soon; ordinary writes
    /// delete far less densely).
    public static let deletionWindowEntries = 32_768
    public static let deletionTriggerEntries = 16_384

    /// Create the database and missing column families when absent. Default true.
    public var createIfMissing = true
    /// Opens the database read-only (RocksDB replays the write-ahead log in memory and writes
    /// nothing); every write fails. For a data volume with no space left.
    public var readOnly = false
    /// Compress SST blocks with zstd (the log and tree compress well). Default true.
    public var zstd = true
    /// Background threads for flush and compaction. Default 2 (the machine has 2 cores).
    public var backgroundThreads: Int32 = 2
    /// Column families compressed with LZ4 instead of zstd: read-latency critical data, where a
    /// block cache miss must decompress fast (LZ4 decompresses ~4x faster). Default none.
    public var lz4Families: Set<String> = []
    /// Memtable size per column family in bytes. Default 64 MiB.
    public var writeBufferBytes: Int = 64 * 1024 * 1024
    /// Memtable sizes in bytes for the named column families, instead of `writeBufferBytes`.
    /// Default none.
    public var writeBufferBytesByFamily: [String: Int] = [:]
    /// Data block size in bytes (before compression) for the named column families, instead of
    /// RocksDB's 4 KiB. A family read in windows of many small records (an index) reads fewer,
    /// larger blocks; a cache miss then reads and decompresses the whole block. Applies to SST
    /// files written from then on (each file records its own). Default none.
    public var blockBytesByFamily: [String: Int] = [:]
    /// Memtable insert hints for the named column families: the length in bytes of the key
    /// prefix (RocksDB's `memtable_insert_with_hint_prefix_extractor`, a fixed prefix) under
    /// which the memtable remembers where its last insert went, so that the next insert with
    /// the same prefix starts its skiplist search there instead of at the top. A win for keys
    /// that arrive in order within their prefix (push IDs); a key far from the remembered
    /// place costs a few comparisons more than no hint; a shorter key takes none. Such a
    /// family's range deletions must start with a key shorter than the prefix
    /// (`WriteBatch.deleteRange`). Default none.
    public var memtableInsertHintPrefixBytesByFamily: [String: Int] = [:]
    /// Block cache in bytes, when `blockCache` is nil. Default 128 MiB.
    public var blockCacheBytes: Int = 128 * 1024 * 1024
    /// A block cache shared with other databases (its capacity bounds all of them together);
    /// nil (default): the database makes its own of `blockCacheBytes`.
    public var blockCache: BlockCache? = nil
    /// Let RocksDB reserve disk space ahead of writing (`allow_fallocate`): a new write-ahead log
    /// reserves 1.1 memtables (about 70 MiB) and a manifest 4 MiB before holding anything, so an
    /// idle namespace took 75 MiB of disk, and a test suite opening hundreds of databases filled
    /// a small volume. Default false: files take the space they hold (a durable write costs the
    /// same either way: `http-ab-bench.sh`, Benchmarks/README.md).
    public var preallocateFiles = false

    public init() {}
}

/// How a write reaches the disk.
public enum WriteDurability: Sendable {
    /// The WAL is fsynced before `write` returns.
    case sync
    /// Written to the WAL (OS page cache) but not fsynced; `flushWAL(sync:)` later.
    case buffered
    /// No WAL at all: only a memtable flush makes the write durable.
    case noWAL
}
