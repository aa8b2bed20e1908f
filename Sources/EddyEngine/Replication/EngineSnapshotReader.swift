// A consistent copy of a whole database for bootstrapping a follower: every record of the tree,
// index, log and meta families as of one RocksDB snapshot, read in bounded chunks. `at` is the
// newest log entry in it: the copy is exactly the state after that entry (tree, indexes and the
// log up to it are written in one batch per entry). The reader is used by one thread at a time.

import EddyModel
import EddyStorage
import EddyTree

public final class EngineSnapshotReader: @unchecked Sendable {
    // @unchecked: used by one task at a time (the log server connection sending it).

    /// The families in the order they are copied; a record names its family by index here.
    public static let families = [ColumnFamilies.tree, ColumnFamilies.index, ColumnFamilies.log, ColumnFamilies.meta]

    public struct Record: Sendable {
        public var family: UInt8
        public var key: [UInt8]
        public var value: [UInt8]

        public init(family: UInt8, key: [UInt8], value: [UInt8]) {
            self.family = family
            self.key = key
            self.value = value
        }
    }

    /// The newest log entry in the snapshot (nil: an empty log).
    public let at: LogID?
    private let snapshot: Snapshot
    private let database: Database
    private var family = 0
    private var iterator: Iterator?

    init(database: Database) throws(EddyError) {
        self.database = database
        self.snapshot = database.makeSnapshot()
        let log = database.makeIterator(database.columnFamily(ColumnFamilies.log), snapshot: self.snapshot)
        log.seekToLast()
        self.at = log.isValid ? LogID(String(decoding: log.key, as: UTF8.self)) : nil
    }

    /// The next records, about `bytesMax` bytes of keys and values (at least one); empty at the end.
    public func next(bytesMax: Int) throws(EddyError) -> [Record] {
        var records: [Record] = []
        var bytes = 0
        while self.family < Self.families.count, records.isEmpty || bytes < bytesMax {
            if self.iterator == nil {
                let iterator = self.database.makeIterator(self.database.columnFamily(Self.families[self.family]), snapshot: self.snapshot)
                iterator.seekToFirst()
                self.iterator = iterator
            }
            let iterator = self.iterator!
            guard iterator.isValid else {
                do {
                    try iterator.checkError()
                } catch {
                    throw EngineErrors.storage(error, while: "reading a snapshot of the \(Self.families[self.family]) family")
                }
                self.iterator = nil
                self.family += 1
                continue
            }
            let record = Record(family: UInt8(self.family), key: iterator.key, value: iterator.value)
            bytes += record.key.count + record.value.count + 9
            records.append(record)
            iterator.next()
        }
        return records
    }
}

extension Engine {
    /// A consistent copy of this database to send to a new follower.
    public func makeSnapshotReader() throws(EddyError) -> EngineSnapshotReader {
        try EngineSnapshotReader(database: self.database)
    }

    /// Creates the database in `directory` (which must not hold one) from a snapshot's records,
    /// as `next()` yields them until it returns nil, and records that it replicates the leader's
    /// database `replicaOf`. Written without syncing each batch, then flushed and synced once:
    /// the caller marks the directory as being bootstrapped until this returns, so a crash in
    /// between is redone from scratch. Returns the number of records.
    public static func restoreSnapshot(
        directory: String, replicaOf: String, next: () throws(EddyError) -> [EngineSnapshotReader.Record]?
    ) throws(EddyError) -> Int {
        let database: Database
        do {
            var storage = StorageOptions()
            storage.lz4Families = [ColumnFamilies.index]
            database = try Database(path: directory, columnFamilies: ColumnFamilies.all, options: storage)
        } catch {
            throw EngineErrors.storage(error, while: "creating \(directory) for a snapshot")
        }
        defer { database.close() }
        let families = EngineSnapshotReader.families.map { database.columnFamily($0) }
        var count = 0
        func storage(_ body: () throws(RocksDBError) -> Void) throws(EddyError) {
            do {
                try body()
            } catch {
                throw EngineErrors.storage(error, while: "writing a snapshot into \(directory)")
            }
        }
        while let records = try next() {
            let batch = WriteBatch()
            for record in records {
                guard Int(record.family) < families.count else {
                    throw EddyError(.corruption, "snapshot record names family \(record.family), which does not exist")
                }
                batch.put(families[Int(record.family)], record.key, record.value)
            }
            try storage { () throws(RocksDBError) in try database.write(batch, durability: .buffered) }
            count += records.count
        }
        try storage { () throws(RocksDBError) in
            try database.put(database.columnFamily(ColumnFamilies.meta), MetaKeys.replicaOf, Array(replicaOf.utf8), durability: .buffered)
            try database.flushMemtables()
            try database.flushWAL(sync: true)
        }
        return count
    }
}
