// A namespace's tree (or one location of it) as JSON, written in pieces while the tree's leaves
// are read in key order: `eddy export` of a database of any size in bounded memory (a chunk of
// output and the path of open objects, never the value).
//
// Reads a read-only RocksDB instance of the namespace's directory, so it works while eddyd runs
// (RocksDB allows read-only opens beside the writer; the export sees the database as of the
// moment it opened, replaying the WAL into its own memory) and on a stopped data directory alike.
// Objects come out with their keys in Firebase key order; arrays come out as objects ("0", "1",
// ...), and priorities as `.priority` members (`{".priority": p, ".value": v}` for a
// primitive), as Firebase's `format=export` does. Priority records are merged in as the walk
// reaches their nodes: both families are in key order and a node's key precedes its leaves'.

import EddyModel
import EddyStorage
import EddyTree

public enum TreeExport {
    /// Writes the JSON of the value at `path` to `write`, in pieces of about `chunkBytes`.
    /// Returns the number of leaves written.
    @discardableResult
    public static func export(
        directory: String, path: Path, chunkBytes: Int = 1 << 20, _ write: ([UInt8]) throws -> Void
    ) throws -> Int {
        var options = StorageOptions()
        options.readOnly = true
        let database: Database
        do {
            database = try Database(path: directory, columnFamilies: ColumnFamilies.all, options: options)
        } catch {
            throw EddyError(.notFound, "cannot open \(directory) to export it: \(error)")
        }
        defer { database.close() }
        let snapshot = database.makeSnapshot()
        let iterator = database.makeIterator(database.columnFamily(ColumnFamilies.tree), snapshot: snapshot)
        let prefix = PathKeyEncoding.encode(path)
        var priorities = PriorityCursor(
            iterator: database.columnFamilyIfPresent(ColumnFamilies.priority).map { database.makeIterator($0, snapshot: snapshot) },
            prefix: prefix)
        var out: [UInt8] = []
        out.reserveCapacity(chunkBytes + 4096)
        var openKeys: [String] = []
        var rootOpen = false
        var first = true  // no member written yet in the innermost open object
        var leaves = 0
        iterator.seek(prefix)
        while iterator.isValid, iterator.keyHasPrefix(prefix) {
            let key = iterator.key
            let leaf = try iterator.withValue { bytes throws(EddyError) in try LeafEncoding.decode(bytes) }
            leaves += 1
            if key.count == prefix.count {
                // A primitive at the location itself: the whole answer.
                try Self.writeLeaf(leaf, priority: priorities.take(key[...]), into: &out)
                try write(out)
                return leaves
            }
            var rest = key[prefix.count...]
            var keys: [String] = []
            var ends: [Int] = []  // ends[i]: the length of the key of the node at keys[...i]
            while !rest.isEmpty {
                keys.append(try PathKeyEncoding.decodeSegment(&rest))
                ends.append(key.count - rest.count)
            }
            if !rootOpen {
                out.append(UInt8(ascii: "{"))
                rootOpen = true
                if let priority = try priorities.take(prefix[...]) {
                    Self.writePriorityMember(priority, into: &out)
                    first = false
                }
            }
            var common = 0
            while common < openKeys.count, common < keys.count - 1, openKeys[common] == keys[common] { common += 1 }
            while openKeys.count > common {
                out.append(UInt8(ascii: "}"))
                openKeys.removeLast()
                first = false
            }
            for (i, k) in keys.enumerated().dropLast().dropFirst(common) {
                if !first { out.append(UInt8(ascii: ",")) }
                JSONWriter.writeString(k, into: &out)
                out.append(contentsOf: Array(":{".utf8))
                openKeys.append(k)
                first = true
                if let priority = try priorities.take(key[..<ends[i]]) {
                    Self.writePriorityMember(priority, into: &out)
                    first = false
                }
            }
            if !first { out.append(UInt8(ascii: ",")) }
            JSONWriter.writeString(keys[keys.count - 1], into: &out)
            out.append(UInt8(ascii: ":"))
            try Self.writeLeaf(leaf, priority: priorities.take(key[...]), into: &out)
            first = false
            if out.count >= chunkBytes {
                try write(out)
                out.removeAll(keepingCapacity: true)
            }
            iterator.next()
        }
        try TreeReader.check(iterator)
        if rootOpen {
            for _ in openKeys { out.append(UInt8(ascii: "}")) }
            out.append(UInt8(ascii: "}"))
        } else {
            out.append(contentsOf: Array("null".utf8))
        }
        try write(out)
        return leaves
    }

    private static func writeLeaf(_ leaf: Value, priority: Value?, into out: inout [UInt8]) throws {
        guard let priority else {
            JSONWriter.write(leaf, into: &out, pretty: false, indent: 0)
            return
        }
        out.append(UInt8(ascii: "{"))
        Self.writePriorityMember(priority, into: &out)
        out.append(contentsOf: Array(",\".value\":".utf8))
        JSONWriter.write(leaf, into: &out, pretty: false, indent: 0)
        out.append(UInt8(ascii: "}"))
    }

    private static func writePriorityMember(_ priority: Value, into out: inout [UInt8]) {
        out.append(contentsOf: Array("\".priority\":".utf8))
        JSONWriter.write(priority, into: &out, pretty: false, indent: 0)
    }
}

/// The priority records under an export's location, taken in key order as the walk reaches
/// their nodes.
private struct PriorityCursor {
    let iterator: Iterator?
    let prefix: [UInt8]
    private var started = false

    init(iterator: Iterator?, prefix: [UInt8]) {
        self.iterator = iterator
        self.prefix = prefix
    }

    /// The priority of the node whose key is `node` (nil: none); records before it, which no
    /// node holds, are passed over.
    mutating func take(_ node: ArraySlice<UInt8>) throws(EddyError) -> Value? {
        guard let iterator else { return nil }
        if !self.started {
            iterator.seek(self.prefix, within: self.prefix)
            self.started = true
        }
        while iterator.isValid, iterator.keyHasPrefix(self.prefix) {
            let order = iterator.withKey { key in compareBytes(key, Array(node)) }
            if order > 0 { return nil }
            if order == 0 {
                let priority = try iterator.withValue { bytes throws(EddyError) in try LeafEncoding.decode(bytes) }
                iterator.next()
                return priority
            }
            iterator.next()
        }
        try TreeReader.check(iterator)
        return nil
    }
}
