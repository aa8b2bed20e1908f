// A consistent point-in-time view of a `Database`. Released exactly once, in deinit.

import CRocksDB

public final class Snapshot: @unchecked Sendable {
    // @unchecked: immutable after init; RocksDB snapshots may be read from any thread.
    private let database: Database
    private let snapshot: OpaquePointer
    let readOptions: OpaquePointer

    init(database: Database) {
        self.database = database
        self.snapshot = rocksdb_create_snapshot(database.db)!
        self.readOptions = rocksdb_readoptions_create()!
        rocksdb_readoptions_set_snapshot(self.readOptions, self.snapshot)
    }

    deinit {
        rocksdb_readoptions_destroy(self.readOptions)
        rocksdb_release_snapshot(self.database.db, self.snapshot)
    }
}
