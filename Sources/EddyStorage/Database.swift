// A RocksDB database opened with named column families.
//
// Thread-safety: RocksDB's `DB` is safe for concurrent use, so `Database` is Sendable; the
// C handles are immutable after `open` and destroyed exactly once in `close()` (or deinit).
// Invariant: after `close()`, no method touches the C handles (preconditions); `close()` ends
// and waits out background compactions (Database+Compaction) before it frees them.

import CRocksDB
import Glibc
import Synchronization

public struct ColumnFamily: @unchecked Sendable {
    // The handle lives as long as its `Database`; RocksDB handles are thread-safe.
    let handle: OpaquePointer
    public let name: String
    /// `StorageOptions.memtableInsertHintPrefixBytesByFamily` for this family, nil when none:
    /// its range deletions must start with a shorter key (`WriteBatch.deleteRange`).
    let insertHintPrefixBytes: Int?
}

public final class Database: @unchecked Sendable {
    // @unchecked: the pointers are set once in init and only freed in close(), which the
    // `closed` flag (under a Mutex) guards against running twice.
    let db: OpaquePointer
    private let options: OpaquePointer
    private let cfOptions: OpaquePointer
    /// `cfOptions` with LZ4 instead of zstd, for `StorageOptions.lz4Families`.
    private let lz4Options: OpaquePointer
    /// Copies for the families of `StorageOptions.writeBufferBytesByFamily`.
    private let ownFamilyOptions: [OpaquePointer]
    /// Each family's options (one of the above), for SST files written outside the
    /// database (`SortedFileLoader`) to have the family's format and compression.
    let familyOptions: [String: OpaquePointer]
    private let blockOptions: OpaquePointer
    /// Table options of the families of `StorageOptions.blockBytesByFamily`.
    private let ownBlockOptions: [OpaquePointer]
    /// The block cache this database uses (its own, or one shared through `StorageOptions`).
    public let blockCache: BlockCache
    private let syncWrite: OpaquePointer
    private let bufferedWrite: OpaquePointer
    private let noWALWrite: OpaquePointer
    let readOptions: OpaquePointer
    public let path: String
    let columnFamilies: [String: ColumnFamily]
    let closed = Mutex(false)
    /// Manual compactions in the background; stopped by `close()` before the handles go.
    let compactions = BackgroundCompactions()
    /// Idle iterators over the newest state (`makeCurrentIterator`); closed before the handles go.
    let iteratorPool = IteratorPool()
    /// Bumped before and after every change that takes no sequence number (an ingest), so
    /// that it is odd while one is under way; part of `currentView`.
    let unsequencedChanges = Atomic<UInt64>(0)

    /// Opens (creating if allowed) the database at `path` with exactly `columnFamilies`
    /// ("default" is implicit and always opened).
    public init(path: String, columnFamilies names: [String], options storage: StorageOptions) throws(RocksDBError) {
        self.path = path
        let options = try Self.makeDBOptions(preallocateFiles: storage.preallocateFiles)
        rocksdb_options_set_create_if_missing(options, storage.createIfMissing ? 1 : 0)
        rocksdb_options_set_create_missing_column_families(options, storage.createIfMissing ? 1 : 0)
        rocksdb_options_increase_parallelism(options, storage.backgroundThreads)
        rocksdb_options_set_max_background_jobs(options, storage.backgroundThreads)
        let cache = storage.blockCache ?? BlockCache(capacityBytes: storage.blockCacheBytes)
        let blockOptions = Self.makeBlockOptions(cache: cache, blockBytes: nil)
        let cfOptions = rocksdb_options_create_copy(options)!
        rocksdb_options_set_write_buffer_size(cfOptions, storage.writeBufferBytes)
        rocksdb_options_set_block_based_table_factory(cfOptions, blockOptions)
        // A file written with runs of deletions (a removed subtree's tombstones) is compacted
        // soon, instead of making every seek near them walk them until ordinary compaction
        // reaches it (see StorageOptions.deletionWindowEntries).
        rocksdb_options_add_compact_on_deletion_collector_factory(
            cfOptions, StorageOptions.deletionWindowEntries, StorageOptions.deletionTriggerEntries)
        if storage.zstd {
            rocksdb_options_set_compression(cfOptions, Int32(rocksdb_zstd_compression))
            rocksdb_options_set_compression(options, Int32(rocksdb_zstd_compression))
        }
        var all = ["default"] + names.filter { $0 != "default" }
        if storage.readOnly, let existing = Self.existingColumnFamilies(path: path, options: options) {
            // A read-only open cannot create a family a newer layout added; it opens those the
            // database has (`columnFamilyIfPresent` tells the caller).
            all = all.filter { existing.contains($0) }
        }
        var handles = [OpaquePointer?](repeating: nil, count: all.count)
        let cNames = all.map { strdup($0) }
        defer { cNames.forEach { free($0) } }
        var namePointers = cNames.map { UnsafePointer<CChar>($0) }
        let lz4Options = rocksdb_options_create_copy(cfOptions)!
        rocksdb_options_set_compression(lz4Options, Int32(rocksdb_lz4_compression))
        // A family with a memtable or block size of its own gets its own copy of the options
        // (and of the table options, for a block size).
        var ownOptions: [OpaquePointer] = []
        var ownBlockOptions: [OpaquePointer] = []
        var cfOptionList: [OpaquePointer?] = all.map { name in
            let shared = storage.zstd && storage.lz4Families.contains(name) ? lz4Options : cfOptions
            let bytes = storage.writeBufferBytesByFamily[name]
            let blockBytes = storage.blockBytesByFamily[name]
            let hintBytes = storage.memtableInsertHintPrefixBytesByFamily[name]
            guard bytes != nil || blockBytes != nil || hintBytes != nil else { return shared }
            let own = rocksdb_options_create_copy(shared)!
            if let bytes { rocksdb_options_set_write_buffer_size(own, bytes) }
            if let hintBytes { Self.setMemtableInsertHint(own, prefixBytes: hintBytes) }
            if let blockBytes {
                let table = Self.makeBlockOptions(cache: cache, blockBytes: blockBytes)
                rocksdb_options_set_block_based_table_factory(own, table)
                ownBlockOptions.append(table)
            }
            ownOptions.append(own)
            return own
        }
        var errptr: UnsafeMutablePointer<CChar>? = nil
        let db =
            storage.readOnly
            ? rocksdb_open_for_read_only_column_families(
                options, path, Int32(all.count), &namePointers, &cfOptionList, &handles, 0, &errptr)
            : rocksdb_open_column_families(options, path, Int32(all.count), &namePointers, &cfOptionList, &handles, &errptr)
        if let errptr {
            let message = String(cString: errptr)
            rocksdb_free(errptr)
            rocksdb_options_destroy(cfOptions)
            rocksdb_options_destroy(lz4Options)
            ownOptions.forEach { rocksdb_options_destroy($0) }
            ownBlockOptions.forEach { rocksdb_block_based_options_destroy($0) }
            rocksdb_options_destroy(options)
            rocksdb_block_based_options_destroy(blockOptions)
            throw RocksDBError(code: RocksDBError.code(of: message), message: message)
        }
        self.db = db!
        self.options = options
        self.cfOptions = cfOptions
        self.lz4Options = lz4Options
        self.ownFamilyOptions = ownOptions
        var familyOptions: [String: OpaquePointer] = [:]
        for (name, option) in zip(all, cfOptionList) { familyOptions[name] = option! }
        self.familyOptions = familyOptions
        self.blockOptions = blockOptions
        self.ownBlockOptions = ownBlockOptions
        self.blockCache = cache
        var families: [String: ColumnFamily] = [:]
        for (name, handle) in zip(all, handles) {
            families[name] = ColumnFamily(handle: handle!, name: name, insertHintPrefixBytes: storage.memtableInsertHintPrefixBytesByFamily[name])
        }
        self.columnFamilies = families
        self.syncWrite = rocksdb_writeoptions_create()!
        rocksdb_writeoptions_set_sync(self.syncWrite, 1)
        self.bufferedWrite = rocksdb_writeoptions_create()!
        self.noWALWrite = rocksdb_writeoptions_create()!
        rocksdb_writeoptions_disable_WAL(self.noWALWrite, 1)
        self.readOptions = rocksdb_readoptions_create()!
    }

    /// Sets RocksDB's `memtable_insert_with_hint_prefix_extractor` (not in the C API's setters;
    /// its options-string form is) to a fixed prefix of `prefixBytes`: a key shorter than that
    /// is outside its domain and is inserted without a hint.
    static func setMemtableInsertHint(_ options: OpaquePointer, prefixBytes: Int) {
        var errptr: UnsafeMutablePointer<CChar>? = nil
        rocksdb_get_options_from_string(
            options, "memtable_insert_with_hint_prefix_extractor=rocksdb.FixedPrefix.\(prefixBytes)", options, &errptr)
        if let errptr {
            // Built-in and fixed: a failure is a RocksDB that lacks the option, not bad input.
            let message = String(cString: errptr)
            rocksdb_free(errptr)
            preconditionFailure("RocksDB refused memtable_insert_with_hint_prefix_extractor: \(message)")
        }
    }

    /// Database options with RocksDB's defaults but `allow_fallocate`, which the C API of
    /// RocksDB 7.8 sets only through an options string.
    private static func makeDBOptions(preallocateFiles: Bool) throws(RocksDBError) -> OpaquePointer {
        let defaults = rocksdb_options_create()!
        defer { rocksdb_options_destroy(defaults) }
        let options = rocksdb_options_create()!
        var errptr: UnsafeMutablePointer<CChar>? = nil
        rocksdb_get_options_from_string(
            defaults, preallocateFiles ? "allow_fallocate=true" : "allow_fallocate=false", options, &errptr)
        if let errptr {
            let message = String(cString: errptr)
            rocksdb_free(errptr)
            rocksdb_options_destroy(options)
            throw RocksDBError(code: RocksDBError.code(of: message), message: message)
        }
        return options
    }

    deinit {
        self.close()
    }

    /// Flushes nothing and closes the handles; idempotent. Callers must not use the database
    /// (or iterators/snapshots from it) afterwards.
    public func close() {
        let wasClosed = self.closed.withLock { closed in
            defer { closed = true }
            return closed
        }
        guard !wasClosed else { return }
        self.compactions.stop { rocksdb_disable_manual_compaction(self.db) }
        self.iteratorPool.close()
        for family in self.columnFamilies.values { rocksdb_column_family_handle_destroy(family.handle) }
        rocksdb_close(self.db)
        rocksdb_writeoptions_destroy(self.syncWrite)
        rocksdb_writeoptions_destroy(self.bufferedWrite)
        rocksdb_writeoptions_destroy(self.noWALWrite)
        rocksdb_readoptions_destroy(self.readOptions)
        rocksdb_options_destroy(self.cfOptions)
        rocksdb_options_destroy(self.lz4Options)
        self.ownFamilyOptions.forEach { rocksdb_options_destroy($0) }
        rocksdb_options_destroy(self.options)
        rocksdb_block_based_options_destroy(self.blockOptions)
        self.ownBlockOptions.forEach { rocksdb_block_based_options_destroy($0) }
    }

    /// Table options: the shared block cache (index and filter blocks in it too), a bloom
    /// filter of 10 bits per key, and `blockBytes` per data block (nil: RocksDB's 4 KiB).
    private static func makeBlockOptions(cache: BlockCache, blockBytes: Int?) -> OpaquePointer {
        let table = rocksdb_block_based_options_create()!
        rocksdb_block_based_options_set_block_cache(table, cache.pointer)
        rocksdb_block_based_options_set_cache_index_and_filter_blocks(table, 1)
        rocksdb_block_based_options_set_filter_policy(table, rocksdb_filterpolicy_create_bloom(10))
        if let blockBytes { rocksdb_block_based_options_set_block_size(table, blockBytes) }
        return table
    }

    /// The family `name`, nil when a read-only open found the database without it.
    public func columnFamilyIfPresent(_ name: String) -> ColumnFamily? {
        self.columnFamilies[name]
    }

    /// The names of the families the database at `path` has; nil when it cannot be listed
    /// (e.g. no database there: the open reports that).
    private static func existingColumnFamilies(path: String, options: OpaquePointer) -> Set<String>? {
        var count = 0
        var errptr: UnsafeMutablePointer<CChar>? = nil
        guard let list = rocksdb_list_column_families(options, path, &count, &errptr) else {
            if let errptr { rocksdb_free(errptr) }
            return nil
        }
        defer { rocksdb_list_column_families_destroy(list, count) }
        var names: Set<String> = []
        for i in 0..<count { if let name = list[i] { names.insert(String(cString: name)) } }
        return names
    }

    public func columnFamily(_ name: String) -> ColumnFamily {
        guard let family = self.columnFamilies[name] else { preconditionFailure("column family \(name) was not opened") }
        return family
    }

    /// The value at `key`, nil when absent.
    public func get(_ family: ColumnFamily, _ key: [UInt8], snapshot: Snapshot? = nil) throws(RocksDBError) -> [UInt8]? {
        let readOptions = snapshot?.readOptions ?? self.readOptions
        var length = 0
        let value = try RocksDBError.check { err in
            key.withUnsafeBufferPointer { k in
                k.withMemoryRebound(to: CChar.self) { k in
                    rocksdb_get_cf(self.db, readOptions, family.handle, k.baseAddress, k.count, &length, err)
                }
            }
        }
        guard let value else { return nil }
        defer { rocksdb_free(value) }
        return Array(UnsafeRawBufferPointer(start: value, count: length))
    }

    public func put(_ family: ColumnFamily, _ key: [UInt8], _ value: [UInt8], durability: WriteDurability) throws(RocksDBError) {
        let options = self.writeOptions(durability)
        try RocksDBError.check { err in
            key.withUnsafeBufferPointer { k in
                value.withUnsafeBufferPointer { v in
                    k.withMemoryRebound(to: CChar.self) { k in
                        v.withMemoryRebound(to: CChar.self) { v in
                            rocksdb_put_cf(self.db, options, family.handle, k.baseAddress, k.count, v.baseAddress, v.count, err)
                        }
                    }
                }
            }
        }
    }

    /// Atomically applies every change in `batch`.
    public func write(_ batch: WriteBatchWithIndex, durability: WriteDurability) throws(RocksDBError) {
        let options = self.writeOptions(durability)
        try RocksDBError.check { err in rocksdb_write_writebatch_wi(self.db, options, batch.batch, err) }
    }

    /// Writes buffered WAL data to the OS and, with `sync`, fsyncs it.
    public func flushWAL(sync: Bool) throws(RocksDBError) {
        try RocksDBError.check { err in rocksdb_flush_wal(self.db, sync ? 1 : 0, err) }
    }

    /// Flushes every column family's memtable to SST files (used at shutdown with no WAL).
    public func flushMemtables() throws(RocksDBError) {
        let flushOptions = rocksdb_flushoptions_create()!
        defer { rocksdb_flushoptions_destroy(flushOptions) }
        rocksdb_flushoptions_set_wait(flushOptions, 1)
        for family in self.columnFamilies.values {
            try RocksDBError.check { err in rocksdb_flush_cf(self.db, flushOptions, family.handle, err) }
        }
    }

    /// Starts (or, with `wait`, completes) a flush of one family's memtable to an SST file.
    public func flush(_ family: ColumnFamily, wait: Bool) throws(RocksDBError) {
        let flushOptions = rocksdb_flushoptions_create()!
        defer { rocksdb_flushoptions_destroy(flushOptions) }
        rocksdb_flushoptions_set_wait(flushOptions, wait ? 1 : 0)
        try RocksDBError.check { err in rocksdb_flush_cf(self.db, flushOptions, family.handle, err) }
    }

    /// RocksDB's estimate of the bytes that keys in [start, end) take in `family`'s SST files
    /// (compressed; entries still in the memtable are not counted).
    public func approximateSize(_ family: ColumnFamily, from start: [UInt8], to end: [UInt8]) throws(RocksDBError) -> UInt64 {
        var size: UInt64 = 0
        try start.withUnsafeBufferPointer { startBytes throws(RocksDBError) in
            try end.withUnsafeBufferPointer { endBytes throws(RocksDBError) in
                var startPointer: UnsafePointer<CChar>? = UnsafeRawPointer(startBytes.baseAddress).map { $0.assumingMemoryBound(to: CChar.self) }
                var endPointer: UnsafePointer<CChar>? = UnsafeRawPointer(endBytes.baseAddress).map { $0.assumingMemoryBound(to: CChar.self) }
                var startLength = start.count
                var endLength = end.count
                try RocksDBError.check { err in
                    rocksdb_approximate_sizes_cf(self.db, family.handle, 1, &startPointer, &startLength, &endPointer, &endLength, &size, err)
                }
            }
        }
        return size
    }

    public func makeIterator(_ family: ColumnFamily, snapshot: Snapshot? = nil) -> Iterator {
        let readOptions = snapshot?.readOptions ?? self.readOptions
        // The iterator keeps its snapshot (which keeps the database) or the database alive.
        return Iterator(rocksdb_create_iterator_cf(self.db, readOptions, family.handle)!, retaining: snapshot ?? self)
    }

    /// The database's newest state: a read that starts after a change completes sees a
    /// different view.
    public var currentView: DatabaseView {
        // The change count first: an ingest bumps it after its files are in.
        let changes = self.unsequencedChanges.load(ordering: .sequentiallyConsistent)
        return DatabaseView(sequence: rocksdb_get_latest_sequence_number(self.db), unsequencedChanges: changes)
    }

    /// An iterator over the newest state, reused from an earlier read when nothing changed
    /// since it was created (`IteratorPool`); it goes back to the pool when released. Its
    /// `view` names the state it reads.
    public func makeCurrentIterator(_ family: ColumnFamily) -> Iterator {
        let view = self.currentView
        guard view.unsequencedChanges & 1 == 0 else {
            // An ingest is under way: the state may change under the view; pool nothing.
            return self.makeIterator(family)
        }
        if let idle = self.iteratorPool.take(family: family.handle, view: view) {
            return Iterator(idle, pooledIn: self, family: family.handle, view: view)
        }
        return Iterator(rocksdb_create_iterator_cf(self.db, self.readOptions, family.handle)!, pooledIn: self, family: family.handle, view: view)
    }

    /// An iterator over `family` that reads exactly `view`, the view of an iterator from
    /// `makeCurrentIterator`; nil when the database has changed since (read again then).
    public func makeCurrentIterator(_ family: ColumnFamily, at view: DatabaseView) -> Iterator? {
        guard view == self.currentView else { return nil }
        if let idle = self.iteratorPool.take(family: family.handle, view: view) {
            return Iterator(idle, pooledIn: self, family: family.handle, view: view)
        }
        let iterator = Iterator(
            rocksdb_create_iterator_cf(self.db, self.readOptions, family.handle)!, pooledIn: self, family: family.handle, view: view)
        // Created between two reads of the same view, it reads that view.
        return view == self.currentView ? iterator : nil
    }

    /// Iterators idle in the pool now (for tests).
    public var idleIteratorCount: Int { self.iteratorPool.idleCount }

    public func makeSnapshot() -> Snapshot {
        Snapshot(database: self)
    }

    func writeOptions(_ durability: WriteDurability) -> OpaquePointer {
        switch durability {
        case .sync: return self.syncWrite
        case .buffered: return self.bufferedWrite
        case .noWAL: return self.noWALWrite
        }
    }
}

