// Folder Replication/: what the engine offers replication: stored entries as they are, digests,
// snapshots for bootstrapping, and the committer's apply of replicated entries (same ids,
// before-images checked). Invariant: a replica applies exactly the leader's entries, in order.
//
// What replication needs from an engine: the log's stored entries as they are (the leader
// sends them unchanged), and a digest of the tree, the indexes and the log to check that a
// replica equals its leader.

import EddyIndexes
import EddyModel
import EddyStorage
import EddyTree

extension Engine {
    /// Up to `limit` stored entries (at most about `bytesMax` bytes, always at least one) with
    /// ids after `after`, in log order, never past the newest durable entry. Blocking.
    public func readStoredLogEntries(after: LogID?, limit: Int, bytesMax: Int) throws(EddyError) -> [(id: LogID, bytes: [UInt8])] {
        try self.readStoredLogTail(after: after, limit: limit, bytesMax: bytesMax).entries
    }

    /// `readStoredLogEntries`, also saying whether the read reached the newest entry durable
    /// when it began (`drained`); false when it stopped at `limit` or `bytesMax` with more to read.
    public func readStoredLogTail(after: LogID?, limit: Int, bytesMax: Int) throws(EddyError) -> (entries: [(id: LogID, bytes: [UInt8])], drained: Bool) {
        guard let durable = self.committer.durableLogID else { return ([], true) }
        if let after, !(after < durable) { return ([], true) }
        var entries: [(id: LogID, bytes: [UInt8])] = []
        guard limit > 0 else { return (entries, false) }
        var bytes = 0
        var drained = true
        try LogScan.forEach(self.database, after: after, through: durable, directory: self.directory) { id, iterator in
            let value = iterator.value
            bytes += value.count + 32
            entries.append((id, value))
            let more = entries.count < limit && bytes < bytesMax
            // Stopped at a bound: drained only if that was the durable entry anyway.
            if !more { drained = id == durable }
            return more
        }
        return (entries, drained)
    }

    /// True when the log holds at least `count` entries; reads at most that many keys.
    public func logHolds(atLeast count: Int) -> Bool {
        let iterator = self.database.makeIterator(self.database.columnFamily(ColumnFamilies.log))
        iterator.seekToFirst()
        var seen = 0
        while iterator.isValid {
            seen += 1
            if seen >= count { return true }
            iterator.next()
        }
        return count <= 0
    }

    /// Records a snapshot copies per entry a replay applies in the same time, halved to lean
    /// towards replaying: a snapshot writes some 2.3 M records/s (tree, index entries, the
    /// whole log) where replay applies some 74 k entries/s, each through the committer
    /// (Benchmarks/README.md, "Catch-up").
    static let snapshotRecordsPerReplayedEntry = 16
    /// Most entries `replicaCatchesUpSoonerFromSnapshot` counts; past that it estimates.
    public static let behindCountMax = 200_000

    /// Whether a replica whose last applied entry is `id` catches up sooner from a snapshot than
    /// by replaying the entries after it: at least `entriesMin` of them, and at least one per
    /// `snapshotRecordsPerReplayedEntry` records a snapshot would copy (RocksDB's estimate of
    /// every family's keys). Counts at most `countMax` entries; a replica further behind in
    /// a database that large is measured by the share of the log's files after `id`. Blocking.
    public func replicaCatchesUpSoonerFromSnapshot(after id: LogID, entriesMin: Int, countMax: Int = Engine.behindCountMax) -> Bool {
        guard entriesMin > 0 else { return false }
        let records = Int(clamping: self.database.integerPropertySummed("rocksdb.estimate-num-keys") ?? 0)
        let needed = max(entriesMin, records / Self.snapshotRecordsPerReplayedEntry)
        let countMax = min(needed, countMax)
        let log = self.database.columnFamily(ColumnFamilies.log)
        let iterator = self.database.makeIterator(log)
        let start = Array(id.rawValue.utf8)
        iterator.seek(start)
        if iterator.isValid, iterator.key == start { iterator.next() }
        var behind = 0
        while iterator.isValid, behind < countMax {
            behind += 1
            iterator.next()
        }
        if behind < countMax { return false }
        if countMax == needed { return true }
        // Over `behindCountMax` behind and still short of `needed`: the log's keys in proportion
        // to its file bytes after `id` (files only; the memtable's newest entries are left out,
        // which leans towards replaying).
        let end = [UInt8](repeating: 0xFF, count: 32)
        guard let total = try? self.database.approximateSize(log, from: [], to: end), total > 0,
            let after = try? self.database.approximateSize(log, from: start, to: end),
            let keys = self.database.property("rocksdb.estimate-num-keys", of: log).flatMap({ Double($0) })
        else { return false }
        return keys * Double(after) / Double(total) >= Double(needed)
    }

    /// The oldest entry still in the log (nil when empty).
    public func firstLogID() throws(EddyError) -> LogID? {
        let iterator = self.database.makeIterator(self.database.columnFamily(ColumnFamilies.log))
        iterator.seekToFirst()
        guard iterator.isValid else { return nil }
        return LogID(String(decoding: iterator.key, as: UTF8.self))
    }

    /// CRC32C digests (with counts) of the tree, the index entries and the log, over one
    /// snapshot. Index entries are digested under their declaration instead of their catalog
    /// id, so replicas that numbered their indexes differently still compare equal.
    public func digest() throws(EddyError) -> Value {
        let snapshot = self.database.makeSnapshot()
        func walk(_ family: String, _ transform: ([UInt8]) -> [UInt8]?) throws(EddyError) -> Value {
            let iterator = self.database.makeIterator(self.database.columnFamily(family), snapshot: snapshot)
            iterator.seekToFirst()
            var crc: UInt32 = 0
            var count = 0
            while iterator.isValid {
                if let key = transform(iterator.key) {
                    crc = CRC32C.checksum(iterator.value, seed: CRC32C.checksum(key, seed: crc))
                    count += 1
                }
                iterator.next()
            }
            do {
                try iterator.checkError()
            } catch {
                throw EngineErrors.storage(error, while: "digesting the \(family) family")
            }
            return .object(["count": .number(Double(count)), "crc32c": .string(String(crc, radix: 16))])
        }
        let names = Dictionary(uniqueKeysWithValues: self.indexCatalog.definitions.map { (IndexDefinition.keyPrefix($0.id), Array($0.declaration.description.utf8)) })
        return .object([
            "tree": try walk(ColumnFamilies.tree) { $0 },
            "index": try walk(ColumnFamilies.index) { key in
                guard key.count >= 4, let name = names[Array(key.prefix(4))] else { return nil }
                return name + [0] + key.dropFirst(4)
            },
            "log": try walk(ColumnFamilies.log) { $0 },
            "priority": try walk(ColumnFamilies.priority) { $0 },
        ])
    }
}

extension Engine {
    /// `readStoredLogEntries` on the reader pool.
    public func storedLogEntries(after: LogID?, limit: Int, bytesMax: Int) async throws(EddyError) -> [(id: LogID, bytes: [UInt8])] {
        try await self.onReader { () throws(EddyError) in try self.readStoredLogEntries(after: after, limit: limit, bytesMax: bytesMax) }
    }

    /// Whether the log holds an entry with this id.
    public func containsLogEntry(_ id: LogID) throws(EddyError) -> Bool {
        do {
            return try self.database.get(self.database.columnFamily(ColumnFamilies.log), Array(id.rawValue.utf8)) != nil
        } catch {
            throw EngineErrors.storage(error, while: "reading the log")
        }
    }
}
