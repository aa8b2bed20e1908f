// The operation log of a namespace's directory, read through a read-only RocksDB instance (beside
// a running daemon or on a stopped data directory): what point-in-time restore replays on top of
// a backup. It says which database it is the log of (its own id, or on a follower's replica the
// leader's), and from where it is complete (entries up to `prunedThrough` were pruned).

import EddyIndexes
import EddyModel
import EddyStorage
import EddyTree

public final class ReadOnlyLog {
    let database: Database
    public let directory: String
    /// The database's id, and on a follower's replica the id of the leader's database.
    public let databaseID: String
    public let replicaOf: String?
    /// The newest pruned entry (nil: the log holds every entry since the first).
    public let prunedThrough: LogID?

    public init(directory: String) throws(EddyError) {
        var options = StorageOptions()
        options.readOnly = true
        do {
            self.database = try Database(path: directory, columnFamilies: ColumnFamilies.all, options: options)
        } catch {
            throw EddyError(.notFound, "cannot open the log in \(directory): \(error)")
        }
        self.directory = directory
        let meta = self.database.columnFamily(ColumnFamilies.meta)
        do {
            self.databaseID = try self.database.get(meta, MetaKeys.databaseID).map { String(decoding: $0, as: UTF8.self) } ?? ""
            self.replicaOf = try self.database.get(meta, MetaKeys.replicaOf).map { String(decoding: $0, as: UTF8.self) }
        } catch {
            self.database.close()
            throw EngineErrors.storage(error, while: "reading \(directory)'s database id")
        }
        do {
            self.prunedThrough = try Engine.logPrunedThrough(in: self.database)
        } catch {
            self.database.close()
            throw error
        }
    }

    /// True when this is the log of database `id` (or of a replica of it).
    public func belongs(to id: String) -> Bool { self.databaseID == id || self.replicaOf == id }

    /// Up to `limit` decoded entries after `after` and at or before `through`, in log order.
    public func entries(after: LogID?, through: LogID, limit: Int) throws(EddyError) -> [LogEntry] {
        var entries: [LogEntry] = []
        guard limit > 0 else { return entries }
        try LogScan.forEach(self.database, after: after, through: through, directory: self.directory) { id, iterator throws(EddyError) in
            entries.append(try LogEntryCodec.decode(id: id, iterator.value))
            return entries.count < limit
        }
        return entries
    }

    /// The newest entry's id; nil when the log is empty.
    public func lastID() throws(EddyError) -> LogID? { try Engine.lastLogID(self.database) }

    /// The newest entry's leadership term (0 when the log is empty or it does not decode).
    public func lastTerm() -> UInt64 { Engine.lastLogTerm(self.database, try? self.lastID()) }

    public func close() { self.database.close() }
}

extension ReadOnlyLog {
    /// `eddy stats`: what a namespace's directory holds, read beside a running daemon or on a
    /// stopped one: its ids, the log's extent and size, RocksDB's byte figures, its indexes.
    public static func stats(directory: String) throws(EddyError) -> Value {
        let log = try ReadOnlyLog(directory: directory)
        defer { log.close() }
        let database = log.database
        let last = try Engine.lastLogID(database)
        let (definitions, _) = try IndexCatalog.load(database)
        var figures: [String: Value] = [
            "databaseId": .string(log.databaseID),
            "replicaOf": log.replicaOf.map { .string($0) } ?? .null,
            "last": last.map { .string($0.rawValue) } ?? .null,
            "prunedThrough": log.prunedThrough.map { .string($0.rawValue) } ?? .null,
            "indexes": .number(Double(definitions.count)),
            "indexesBuilding": .number(Double(definitions.count { !$0.isReady })),
        ]
        let sizes: [(String, String)] = [("sstBytes", "rocksdb.live-sst-files-size"), ("pendingCompactionBytes", "rocksdb.estimate-pending-compaction-bytes")]
        for (name, property) in sizes {
            figures[name] = database.integerPropertySummed(property).map { .number(Double($0)) } ?? .null
        }
        figures["logBytes"] =
            (try? database.approximateSize(database.columnFamily(ColumnFamilies.log), from: [], to: [UInt8](repeating: 0xFF, count: 32)))
            .map { .number(Double($0)) } ?? .null
        return .object(figures)
    }
}
