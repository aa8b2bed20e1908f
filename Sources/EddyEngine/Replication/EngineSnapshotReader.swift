// A consistent copy of a whole database for bootstrapping a follower: every record of the tree,
// index, log, meta and priority families as of one RocksDB snapshot, read in bounded chunks. `at` is the
// newest log entry in it: the copy is exactly the state after that entry (tree, indexes and the
// log up to it are written in one batch per entry). The reader is used by one thread at a time.

import EddyModel
import EddyStorage
import EddyTree

public final class EngineSnapshotReader: @unchecked Sendable {
    // @unchecked: used by one task at a time (the log server connection sending it).

    /// The families in the order they are copied; a record names its family by index here.
    /// `priority` came with storage format 4 (appended, so the other indexes stay).
    public static let families = [ColumnFamilies.tree, ColumnFamilies.index, ColumnFamilies.log, ColumnFamilies.meta, ColumnFamilies.priority]

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
        try self.next(bytesMax: bytesMax) { family, key, value in
            records.append(Record(family: family, key: Array(key), value: Array(value)))
        }
        return records
    }

    /// Hands `body` the next records (family index, key, value; the buffers are valid during the
    /// call only), about `bytesMax` bytes of keys and values and at least one; returns how many,
    /// 0 at the end. Nothing is copied on the way.
    @discardableResult
    public func next(bytesMax: Int, _ body: (UInt8, UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Void) throws(EddyError) -> Int {
        var count = 0
        var bytes = 0
        while self.family < Self.families.count, count == 0 || bytes < bytesMax {
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
            iterator.withKey { key in
                iterator.withValue { value in
                    body(UInt8(self.family), key, value)
                    bytes += key.count + value.count + 9
                }
            }
            count += 1
            iterator.next()
        }
        return count
    }
}

extension Engine {
    /// A consistent copy of this database to send to a new follower.
    public func makeSnapshotReader() throws(EddyError) -> EngineSnapshotReader {
        try EngineSnapshotReader(database: self.database)
    }
}
