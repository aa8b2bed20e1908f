// `verify()`: the one consistency checker, used by tests, `eddy verify` and after recovery.
//
// Checks, stopping at the first problem:
// 1. Tree: every key decodes into valid keys within the path limits, every leaf decodes, and
//    no leaf key is a prefix of the next key (a primitive never has descendants).
// 2. Log: every key is a push ID, keys strictly increase, every entry passes its checksum
//    and decodes.
// 3. Agreement: replaying the whole log from an empty tree gives exactly the tree. When the log
//    was pruned (`Engine.pruneLog`) its start is unknown, so the check runs backwards instead:
//    from the tree, undoing the retained entries newest first, each entry's changes must equal
//    the state just after it (and its before-images give the state before it).
// 4. Indexes: every ready index equals, entry by entry, what the tree implies
//    (`IndexVerifier`); no entries of unknown index ids.
// 5. Priorities: every record is a number or a string on a node the tree holds. The agreement
//    of 3 compares the tree with its priorities (export form), replaying by `Value.setExport`.
// All reads use one RocksDB snapshot, so concurrent writes do not cause false reports.

import EddyIndexes
import EddyModel
import EddyStorage
import EddyTree

public struct VerifyReport: Sendable, CustomStringConvertible {
    public var leafCount = 0
    public var logEntryCount = 0
    /// Ready indexes checked, their entries, and indexes still building (not checked).
    public var indexCount = 0
    public var indexEntryCount = 0
    public var buildingIndexCount = 0
    public var lastLogID: LogID?
    /// The first problem found; nil when everything agrees.
    public var problem: String?

    public var isHealthy: Bool { self.problem == nil }

    public var description: String {
        var head = "\(self.leafCount) leaves, \(self.logEntryCount) log entries, last log id \(self.lastLogID?.rawValue ?? "none"), \(self.indexCount) indexes with \(self.indexEntryCount) entries"
        if self.buildingIndexCount > 0 { head += " (\(self.buildingIndexCount) still building, not checked)" }
        return self.problem.map { "\(head)\nPROBLEM: \($0)" }
            ?? "\(head)\nOK: tree well-formed, log ordered and decodable, log replay equals tree, indexes agree with the tree"
    }
}

extension Engine {
    /// Blocking; reads the whole database.
    public func verify() throws(EddyError) -> VerifyReport {
        let snapshot = self.database.makeSnapshot()
        var report = VerifyReport()
        let tree = self.database.makeIterator(self.database.columnFamily(ColumnFamilies.tree), snapshot: snapshot)
        tree.seekToFirst()
        var previous: [UInt8]? = nil
        while tree.isValid {
            let key = tree.key
            if let previous, key.starts(with: previous) {
                report.problem = "tree: primitive at \(describe(previous)) has a descendant \(describe(key))"
                return report
            }
            do {
                let path = try PathKeyEncoding.decode(key)
                try path.validateSize()
                for k in path.keys { try Key.validate(k) }
                _ = try tree.withValue { bytes throws(EddyError) in try LeafEncoding.decode(bytes) }
            } catch {
                report.problem = "tree: record \(describe(key)): \(error.message)"
                return report
            }
            report.leafCount += 1
            previous = key
            tree.next()
        }
        try TreeReader.check(tree)

        let pruned = try self.logPrunedThrough()
        var retained: [LogEntry] = []
        var replayed = Value.null
        let log = self.database.makeIterator(self.database.columnFamily(ColumnFamilies.log), snapshot: snapshot)
        log.seekToFirst()
        while log.isValid {
            let key = String(decoding: log.key, as: UTF8.self)
            guard let id = LogID(key) else {
                report.problem = "log: key \(key.debugDescription) is not a push ID"
                return report
            }
            if let last = report.lastLogID, !(last < id) {
                report.problem = "log: id \(id) does not follow \(last)"
                return report
            }
            let entry: LogEntry
            do {
                entry = try LogEntryCodec.decode(id: id, log.value)
            } catch {
                report.problem = "log: \(error.message)"
                return report
            }
            if pruned == nil {
                for change in entry.changes {
                    replayed.setExport(change.value, at: entry.location.appending(change.path))
                }
            } else {
                retained.append(entry)
            }
            report.logEntryCount += 1
            report.lastLogID = id
            log.next()
        }
        do {
            try log.checkError()
        } catch {
            throw EngineErrors.storage(error, while: "reading the log")
        }
        let treeIterator = self.database.makeIterator(self.database.columnFamily(ColumnFamilies.tree), snapshot: snapshot)
        var stored = try TreeReader.readSubtree(treeIterator, prefix: []).value
        if let family = self.database.columnFamilyIfPresent(ColumnFamilies.priority) {
            let records = try PriorityRecords.records(self.database.makeIterator(family, snapshot: snapshot), under: [])
            for record in records {
                treeIterator.seek(record.key, within: record.key)
                let exists = treeIterator.isValid && treeIterator.keyHasPrefix(record.key)
                try TreeReader.check(treeIterator)
                guard exists, record.priority.isPriority else {
                    report.problem =
                        "priority: record \(describe(record.key)) \(exists ? "is not a number or a string" : "is on a node the tree does not hold")"
                    return report
                }
            }
            stored = try PriorityRecords.merging(records, into: stored, prefix: [])
        }
        if let pruned {
            var state = stored
            for entry in retained.reversed() {
                for change in entry.changes where state.child(at: entry.location.appending(change.path)) != change.value {
                    report.problem =
                        "tree and log disagree: undoing the entries after \(entry.id) (the log is pruned through \(pruned)), its change at \(entry.location.appending(change.path).abbreviated) is not what the tree holds"
                    return report
                }
                // In the order the entry recorded them, as a discarded entry is written back.
                for image in entry.before { state.setExport(image.value, at: image.path) }
            }
        } else if stored != replayed {
            report.problem = "tree and log disagree: replaying \(report.logEntryCount) log entries does not give the stored tree"
            return report
        }
        // The catalog as of the snapshot: a build may finish while verify runs.
        let definitions = try IndexCatalog.load(self.database, snapshot: snapshot).definitions
        report.indexCount = definitions.filter(\.isReady).count
        report.buildingIndexCount = definitions.count - report.indexCount
        report.problem = try IndexVerifier(database: self.database, snapshot: snapshot, definitions: definitions)
            .verify(entryCount: &report.indexEntryCount)
        return report
    }

    private func describe(_ key: [UInt8]) -> String {
        (try? PathKeyEncoding.decode(key).description) ?? key.map { String($0, radix: 16) }.joined(separator: " ")
    }
}
