// A namespace's tree (or one location of it) as JSON, written in pieces while the tree's leaves
// are read in key order: `eddy export` of a database of any size in bounded memory (a chunk of
// output and the path of open objects, never the value).
//
// Reads a read-only RocksDB instance of the namespace's directory, so it works while eddyd runs
// (RocksDB allows read-only opens beside the writer; the export sees the database as of the
// moment it opened, replaying the WAL into its own memory) and on a stopped data directory alike.
// Objects come out with their keys in Firebase key order; arrays come out as objects ("0", "1",
// ...), as Firebase's `format=export` does.

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
        let iterator = database.makeIterator(database.columnFamily(ColumnFamilies.tree))
        let prefix = PathKeyEncoding.encode(path)
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
                JSONWriter.write(leaf, into: &out, pretty: false, indent: 0)
                try write(out)
                return leaves
            }
            var rest = key[prefix.count...]
            var keys: [String] = []
            while !rest.isEmpty { keys.append(try PathKeyEncoding.decodeSegment(&rest)) }
            if !rootOpen {
                out.append(UInt8(ascii: "{"))
                rootOpen = true
            }
            var common = 0
            while common < openKeys.count, common < keys.count - 1, openKeys[common] == keys[common] { common += 1 }
            while openKeys.count > common {
                out.append(UInt8(ascii: "}"))
                openKeys.removeLast()
                first = false
            }
            for k in keys[common..<(keys.count - 1)] {
                if !first { out.append(UInt8(ascii: ",")) }
                JSONWriter.writeString(k, into: &out)
                out.append(contentsOf: Array(":{".utf8))
                openKeys.append(k)
                first = true
            }
            if !first { out.append(UInt8(ascii: ",")) }
            JSONWriter.writeString(keys[keys.count - 1], into: &out)
            out.append(UInt8(ascii: ":"))
            JSONWriter.write(leaf, into: &out, pretty: false, indent: 0)
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
}
