// Writing a snapshot streamed from a leader into a new database (a follower's bootstrap; see
// EngineSnapshotReader for what a snapshot holds). Invariant: the database is complete and
// durable only when `finish` returned; until then the caller keeps it apart (FollowerBootstrap
// writes it into `<ns>.incoming` and swaps it in afterwards).

import EddyModel
import EddyStorage
import EddyTree

/// Writes a snapshot's records into a new database (`Engine.restoreSnapshot`): each family's
/// records, which come in key order, into SST files ingested at the end (several times cheaper
/// per record than memtable inserts; see SortedFileLoader). Records out of key order within a
/// family (a broken leader) are refused. Use from one thread.
public final class SnapshotRestore {
    private let directory: String
    private let database: Database
    private let loaders: [SortedFileLoader]
    /// Records put.
    public private(set) var count = 0

    /// Creates the database in `directory`, which must not hold one.
    public init(directory: String) throws(EddyError) {
        self.directory = directory
        do {
            self.database = try Database(path: directory, columnFamilies: ColumnFamilies.all, options: .engineLayout())
        } catch {
            throw EngineErrors.storage(error, while: "creating \(directory) for a snapshot")
        }
        self.loaders = EngineSnapshotReader.families.map { [database] in
            SortedFileLoader(database: database, family: database.columnFamily($0), directory: directory)
        }
    }

    deinit {
        self.database.close()
    }

    /// Adds one record (`family` indexes `EngineSnapshotReader.families`).
    public func put(family: UInt8, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws(EddyError) {
        let loader = try self.loader(family)
        do {
            try loader.put(key, value)
        } catch {
            throw self.writeError(error)
        }
        self.count += 1
    }

    /// `put` of a decoded record.
    public func put(_ record: EngineSnapshotReader.Record) throws(EddyError) {
        let loader = try self.loader(record.family)
        do {
            try loader.put(record.key, record.value)
        } catch {
            throw self.writeError(error)
        }
        self.count += 1
    }

    private func loader(_ family: UInt8) throws(EddyError) -> SortedFileLoader {
        guard Int(family) < self.loaders.count else {
            throw EddyError(.corruption, "snapshot record names family \(family), which does not exist")
        }
        return self.loaders[Int(family)]
    }

    private func writeError(_ error: RocksDBError) -> EddyError {
        EngineErrors.storage(error, while: "writing a snapshot into \(self.directory)")
    }

    /// Ingests what was put, records that the database replicates `replicaOf`, flushes and
    /// syncs; the database is closed after. Returns the number of records.
    public func finish(replicaOf: String) throws(EddyError) -> Int {
        do {
            for loader in self.loaders { try loader.finish() }
            try self.database.put(self.database.columnFamily(ColumnFamilies.meta), MetaKeys.replicaOf, Array(replicaOf.utf8), durability: .buffered)
            try self.database.flushMemtables()
            try self.database.flushWAL(sync: true)
        } catch {
            throw self.writeError(error)
        }
        self.database.close()
        return self.count
    }
}

extension Engine {
    /// Creates the database in `directory` (which must not hold one) from a snapshot's records,
    /// as `next()` yields them until it returns nil, and records that it replicates the leader's
    /// database `replicaOf`. Each family is written into SST files (synced as each is finished)
    /// and ingested at the end, then the rest is flushed and synced once: the caller marks the
    /// directory as being bootstrapped until this returns, so a crash in between is redone from
    /// scratch. Records out of key order within a family (a broken leader) are refused, nothing
    /// of the load kept. Returns the number of records.
    public static func restoreSnapshot(
        directory: String, replicaOf: String, next: () throws(EddyError) -> [EngineSnapshotReader.Record]?
    ) throws(EddyError) -> Int {
        let restore = try SnapshotRestore(directory: directory)
        while let records = try next() {
            for record in records { try restore.put(record) }
        }
        return try restore.finish(replicaOf: replicaOf)
    }
}
