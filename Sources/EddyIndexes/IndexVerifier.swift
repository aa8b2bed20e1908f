// The index part of `verify()`: every ready index is compared with the tree entry by entry
// (same keys, same covered values), in key order, at one snapshot; the first disagreement is
// reported with the index, the child and what differs. Also refuses entries whose index id is
// not in the catalog (left behind by a drop). A building index is reported as such, not
// checked: its entries are complete only once the build ends.
//
// Memory: the expected entries of one location are sorted in memory (one location at a time).

import EddyModel
import EddyStorage
import EddyTree

package struct IndexVerifier {
    let database: Database
    let snapshot: Snapshot
    let definitions: [IndexDefinition]

    package init(database: Database, snapshot: Snapshot, definitions: [IndexDefinition]) {
        self.database = database
        self.snapshot = snapshot
        self.definitions = definitions
    }

    /// Checked entry count, or the first problem.
    package func verify(entryCount: inout Int) throws(EddyError) -> String? {
        let index = self.database.makeIterator(self.database.columnFamily(ColumnFamilies.index), snapshot: self.snapshot)
        // Every id in the index column family must belong to a catalog entry.
        let known = Set(self.definitions.map(\.id))
        index.seekToFirst()
        while index.isValid {
            let key = index.key
            guard key.count >= 4 else { return "index: entry key \(hex(key)) is shorter than an index id" }
            let id = key[..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            if !known.contains(id) { return "index: entries of index id \(id), which is not in the catalog" }
            index.seek(IndexDefinition.keyPrefix(id) + [0xFF])
        }
        try check(index)
        for definition in self.definitions where definition.isReady {
            if let problem = try self.verify(definition, index: index, entryCount: &entryCount) {
                return "index \(definition.description): \(problem)"
            }
        }
        return nil
    }

    private func verify(_ definition: IndexDefinition, index: Iterator, entryCount: inout Int) throws(EddyError) -> String? {
        let tree = self.database.makeIterator(self.database.columnFamily(ColumnFamilies.tree), snapshot: self.snapshot)
        var scan = IndexChildScan(definition: definition, tree: tree, from: nil)
        let prefix = definition.keyPrefix
        index.seek(prefix)
        var pending: [(key: [UInt8], value: [UInt8], path: Path)] = []
        var pendingLocation: [UInt8]? = nil

        func compareLocation() throws(EddyError) -> String? {
            pending.sort { $0.key.lexicographicallyPrecedes($1.key) }
            for expected in pending {
                guard index.isValid, index.keyHasPrefix(prefix) else {
                    return "missing entry for \(expected.path)"
                }
                let actual = index.key
                if actual != expected.key {
                    if actual.lexicographicallyPrecedes(expected.key) {
                        return "unexpected entry \(self.describe(actual, definition)) (expected \(expected.path) next)"
                    }
                    return "missing entry for \(expected.path) (found \(self.describe(actual, definition)) instead)"
                }
                if index.value != expected.value {
                    return "entry for \(expected.path) holds a stale copy of the child"
                }
                entryCount += 1
                index.next()
            }
            pending.removeAll(keepingCapacity: true)
            return nil
        }

        while let child = try scan.next() {
            let location = Array(child.childPrefix[..<child.locationEnd])
            if location != pendingLocation {
                if let problem = try compareLocation() { return problem }
                pendingLocation = location
            }
            let entry = definition.entry(child)
            pending.append((entry.key, entry.value, try PathKeyEncoding.decode(child.childPrefix)))
        }
        if let problem = try compareLocation() { return problem }
        if index.isValid, index.keyHasPrefix(prefix) {
            return "unexpected entry \(self.describe(index.key, definition)) (no such child in the tree)"
        }
        try check(index)
        return nil
    }

    private func describe(_ key: [UInt8], _ definition: IndexDefinition) -> String {
        var rest = key.dropFirst(4)
        var keys: [String] = []
        for _ in 0..<definition.depth {
            guard let k = try? PathKeyEncoding.decodeSegment(&rest) else { return hex(key) }
            keys.append(k)
        }
        guard let length = try? SortValueEncoding.length(rest) else { return hex(key) }
        var sortBytes = rest.prefix(length)
        rest = rest.dropFirst(length)
        guard let sort = try? SortValueEncoding.decode(&sortBytes), let child = try? PathKeyEncoding.decodeSegment(&rest) else {
            return hex(key)
        }
        let sortText = sort.isPrimitive || sort.isNull ? JSONWriter.string(sort) : "(object)"
        return "\(Path(validatedKeys: keys + [child])) (sort value \(sortText))"
    }

    private func check(_ iterator: Iterator) throws(EddyError) {
        do {
            try iterator.checkError()
        } catch {
            throw EngineErrors.storage(error, while: "reading the index")
        }
    }
}

private func hex(_ bytes: [UInt8]) -> String {
    bytes.map { b in String(b, radix: 16).count == 1 ? "0" + String(b, radix: 16) : String(b, radix: 16) }.joined(separator: " ")
}
