// One RocksDB LRU block cache (uncompressed data blocks, and index and filter blocks, which
// `Database` keeps in the cache too), shareable between databases. A daemon opens every
// namespace with the same cache, so its capacity bounds the block cache memory of all of them
// together, however many are open.
//
// RocksDB holds a cache by reference count: every database opened with it keeps its own
// reference, so this object and those databases may end in any order.

import CRocksDB

public final class BlockCache: @unchecked Sendable {
    // @unchecked: `pointer` is set once; RocksDB's cache is thread-safe.
    let pointer: OpaquePointer
    /// The most bytes the cache holds (RocksDB's LRU cache may exceed it briefly while blocks
    /// in use are pinned).
    public let capacityBytes: Int

    /// A cache of `capacityBytes` (more than 0).
    public init(capacityBytes: Int) {
        precondition(capacityBytes > 0, "a block cache needs a capacity above 0 bytes")
        self.pointer = rocksdb_cache_create_lru(capacityBytes)!
        self.capacityBytes = capacityBytes
    }

    /// Bytes the cache holds now, over every database that uses it.
    public var usedBytes: Int { Int(rocksdb_cache_get_usage(self.pointer)) }

    deinit {
        rocksdb_cache_destroy(self.pointer)
    }
}
