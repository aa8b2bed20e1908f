// The state of one `TreeJSONStream`: its snapshot, its two iterators and the path of open
// containers, resumable chunk by chunk. See TreeJSONStream.swift for the output's invariants.
// Every member is touched only under `lock`; `release()` destroys the RocksDB objects and
// makes later chunks throw `shuttingDown`.

import EddyModel
import EddyStorage
import EddyTree
import Foundation

final class TreeJSONCursor: @unchecked Sendable {
    // @unchecked: every member is touched only under `lock`.
    private struct Container {
        /// The container's key in its parent (empty for the location itself).
        var key: String
        var isArray: Bool
        /// Members (array elements, holes included) written so far.
        var written = 0
    }

    private let lock = NSLock()
    private var snapshot: Snapshot?
    private var iterator: Iterator?
    private var lookahead: Iterator?
    private let prefix: [UInt8]
    private let pretty: Bool
    private var started = false
    private var open: [Container] = []

    init(database: Database, path: Path, pretty: Bool) {
        let snapshot = database.makeSnapshot()
        let family = database.columnFamily(ColumnFamilies.tree)
        self.snapshot = snapshot
        self.iterator = database.makeIterator(family, snapshot: snapshot)
        self.lookahead = database.makeIterator(family, snapshot: snapshot)
        self.prefix = PathKeyEncoding.encode(path)
        self.pretty = pretty
    }

    /// Destroys the iterators and the snapshot (waits for a chunk being read). Idempotent.
    func release() {
        self.lock.lock()
        defer { self.lock.unlock() }
        self.iterator = nil
        self.lookahead = nil
        self.snapshot = nil
    }

    func next(bytesMax: Int) throws(EddyError) -> (chunk: [UInt8], finished: Bool) {
        self.lock.lock()
        defer { self.lock.unlock() }
        guard let iterator = self.iterator, let lookahead = self.lookahead else {
            throw EddyError(.shuttingDown, "the database closed while this answer was being sent")
        }
        return try self.fill(iterator, lookahead, bytesMax: bytesMax)
    }

    private func fill(_ iterator: Iterator, _ lookahead: Iterator, bytesMax: Int) throws(EddyError) -> ([UInt8], Bool) {
        var out: [UInt8] = []
        out.reserveCapacity(bytesMax + 1024)
        if !self.started {
            self.started = true
            iterator.seek(self.prefix)
            guard iterator.isValid, iterator.keyHasPrefix(self.prefix) else {
                try TreeReader.check(iterator)
                out.append(contentsOf: "null".utf8)
                return (out, true)
            }
            if iterator.key.count == self.prefix.count {
                let leaf = try iterator.withValue { bytes throws(EddyError) in try LeafEncoding.decode(bytes) }
                JSONWriter.write(leaf, into: &out, pretty: self.pretty, indent: 0)
                return (out, true)
            }
            let isArray = try TreeJSONWriter.rendersAsArray(lookahead, self.prefix, firstLeaf: iterator.key)
            self.open = [Container(key: "", isArray: isArray)]
            out.append(UInt8(ascii: isArray ? "[" : "{"))
        }
        while out.count < bytesMax, iterator.isValid, iterator.keyHasPrefix(self.prefix) {
            let key = iterator.key
            let leaf = try iterator.withValue { bytes throws(EddyError) in try LeafEncoding.decode(bytes) }
            var rest = key[self.prefix.count...]
            var keys: [String] = []
            var ends: [Int] = []  // the end of each segment in `key`
            while !rest.isEmpty {
                keys.append(try PathKeyEncoding.decodeSegment(&rest))
                ends.append(key.count - rest.count)
            }
            guard !keys.isEmpty else {
                throw EddyError(.corruption, "tree has a primitive with descendants under key prefix \(self.prefix)")
            }
            // open[i + 1] is the container at keys[i]; close those that are not ancestors.
            var common = 0
            while common + 1 < self.open.count, common < keys.count - 1, self.open[common + 1].key == keys[common] { common += 1 }
            while self.open.count > common + 1 { self.close(into: &out) }
            for i in common..<(keys.count - 1) {
                self.beginMember(keys[i], into: &out)
                let isArray = try TreeJSONWriter.rendersAsArray(lookahead, Array(key[..<ends[i]]), firstLeaf: key)
                self.open.append(Container(key: keys[i], isArray: isArray))
                out.append(UInt8(ascii: isArray ? "[" : "{"))
            }
            self.beginMember(keys[keys.count - 1], into: &out)
            JSONWriter.write(leaf, into: &out, pretty: self.pretty, indent: 0)  // a primitive: no indentation
            iterator.next()
        }
        if iterator.isValid, iterator.keyHasPrefix(self.prefix) { return (out, false) }
        try TreeReader.check(iterator)
        while !self.open.isEmpty { self.close(into: &out) }
        return (out, true)
    }

    /// Writes what precedes the member `key` of the innermost open container: holes (arrays),
    /// the separator, the indentation, and the key (objects).
    private func beginMember(_ key: String, into out: inout [UInt8]) {
        let depth = self.open.count - 1
        if self.open[depth].isArray {
            let index = JSONWriter.arrayIndex(key)!  // rendersAsArray checked every key
            while self.open[depth].written < index {
                self.separate(depth, into: &out)
                out.append(contentsOf: "null".utf8)
            }
            self.separate(depth, into: &out)
        } else {
            self.separate(depth, into: &out)
            JSONWriter.writeString(key, into: &out)
            JSONWriter.writeMemberSeparator(into: &out, pretty: self.pretty)
        }
    }

    /// Pretty output as `JSONWriter`'s: an object's members one per line, indented by the
    /// objects enclosing them; an array's elements on its line, `[ a, b ]`.
    private func separate(_ depth: Int, into out: inout [UInt8]) {
        if self.open[depth].written > 0 { out.append(UInt8(ascii: ",")) }
        if self.pretty {
            if self.open[depth].isArray {
                out.append(UInt8(ascii: " "))
            } else {
                JSONWriter.newline(&out, self.objectsEnclosing(depth) + 1)
            }
        }
        self.open[depth].written += 1
    }

    private func close(into out: inout [UInt8]) {
        let container = self.open.removeLast()
        if self.pretty, container.written > 0 {
            if container.isArray {
                out.append(UInt8(ascii: " "))
            } else {
                JSONWriter.newline(&out, self.objectsEnclosing(self.open.count))
            }
        }
        out.append(UInt8(ascii: container.isArray ? "]" : "}"))
    }

    /// How many of the open containers before `depth` are objects.
    private func objectsEnclosing(_ depth: Int) -> Int {
        var count = 0
        for container in self.open[..<depth] where !container.isArray { count += 1 }
        return count
    }
}
