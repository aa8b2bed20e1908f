// Walks the tree in key order and yields every child of every location an index's pattern
// matches, starting at a tree key: as a `Value` (`next()`, for `verify()`) or as its index entry
// written straight from the leaves (`nextEntry()`, for online builds; byte for byte the entry
// of the `Value`). Resumable: `resumeKey` is where the next call continues. Subtrees a literal
// pattern segment rules out are skipped with one seek; the scan never leaves the pattern's
// literal key prefix.

import EddyModel
import EddyStorage
import EddyTree

package struct IndexChildScan {
    package struct Child {
        /// Encoded child path; `childKeyBytes[..<locationEnd]` is the encoded location.
        var childPrefix: [UInt8]
        var locationEnd: Int
        var value: Value
    }

    let definition: IndexDefinition
    let tree: Iterator
    let scanPrefix: [UInt8]
    /// Encoded literal segments by pattern depth (nil for wildcards).
    private let literalSegments: [[UInt8]?]
    /// The first child may start before the resume key (keys were added to it since), so it is
    /// read with a seek; every later child starts exactly where the iterator stands.
    private var resumed = false

    package init(definition: IndexDefinition, tree: Iterator, from resumeKey: [UInt8]?) {
        self.definition = definition
        self.tree = tree
        self.scanPrefix = definition.literalTreePrefix
        self.literalSegments = definition.declaration.location.map { segment in
            guard case .key(let k) = segment else { return nil }
            var out: [UInt8] = []
            PathKeyEncoding.appendSegment(k, to: &out)
            return out
        }
        let start = resumeKey ?? self.scanPrefix
        tree.seek(start.lexicographicallyPrecedes(self.scanPrefix) ? self.scanPrefix : start)
    }

    /// The tree key the scan continues from; nil when it is done.
    package var resumeKey: [UInt8]? {
        guard self.tree.isValid, self.tree.keyHasPrefix(self.scanPrefix) else { return nil }
        return self.tree.key
    }

    package mutating func next() throws(EddyError) -> Child? {
        guard let (childPrefix, locationEnd) = try self.nextChildPrefix() else { return nil }
        // Leaves the iterator on the first key after the child.
        let value = try TreeReader.readSubtree(self.tree, prefix: childPrefix, positioned: self.resumed).value
        self.resumed = true
        return Child(childPrefix: childPrefix, locationEnd: locationEnd, value: value)
    }

    /// The next child's index entry, as `definition.entry(next())` gives it, written straight
    /// from the tree's leaves: the covered JSON by `TreeJSONWriter` (byte for byte what
    /// `JSONWriter` writes for the child), the sort value caught on its way. A child past the
    /// cover limits is read again as a `Value` (its sort value may come after the cut).
    package mutating func nextEntry() throws(EddyError) -> (key: [UInt8], value: [UInt8])? {
        guard let (childPrefix, locationEnd) = try self.nextChildPrefix() else { return nil }
        var sortKey = childPrefix
        if case .child(let path) = self.definition.declaration.on {
            for segment in path.keys { PathKeyEncoding.appendSegment(segment, to: &sortKey) }
        }
        var sortValue: Value = .null
        var leaves = 0
        var json: [UInt8] = [IndexDefinition.coveredTag]
        json.reserveCapacity(128)
        let complete = try TreeJSONWriter.appendSubtree(
            self.tree, prefix: childPrefix, positioned: self.resumed, bytesMax: Limits.indexCoverBytesMax + 1, into: &json
        ) { key, leaf in
            leaves += 1
            if key.count == sortKey.count {
                if key == sortKey { sortValue = leaf }
            } else if key.count > sortKey.count, key.starts(with: sortKey) {
                sortValue = .object([:])  // every object encodes as the same sort value
            }
            return leaves <= Limits.indexCoverLeavesMax
        }
        self.resumed = true
        guard complete else {
            // Past a cover limit, and the sort value may lie beyond the cut: the `Value` path.
            let value = try TreeReader.readSubtree(self.tree, prefix: childPrefix).value
            return self.definition.entry(Child(childPrefix: childPrefix, locationEnd: locationEnd, value: value))
        }
        let key = self.definition.entryKey(
            location: Array(childPrefix[..<locationEnd]), sortValue: sortValue, childSegment: childPrefix[locationEnd...])
        return (key, json.count - 1 <= Limits.indexCoverBytesMax ? json : IndexDefinition.uncovered)
    }

    /// Positions the scan on the next child and returns its encoded path and the length of its
    /// location's encoding; the iterator stands on the child's first key.
    private mutating func nextChildPrefix() throws(EddyError) -> (childPrefix: [UInt8], locationEnd: Int)? {
        let depth = self.definition.depth
        outer: while self.tree.isValid, self.tree.keyHasPrefix(self.scanPrefix) {
            let key = self.tree.key
            var offset = 0
            var locationEnd = 0
            for level in 0...depth {
                guard offset < key.count else {
                    // A primitive at or above the location level: no children here.
                    self.tree.next()
                    continue outer
                }
                guard let length = PathKeyEncoding.segmentLength(key[offset...]) else {
                    throw EddyError(.corruption, "malformed tree key while building \(self.definition.description)")
                }
                if level < depth, let literal = self.literalSegments[level],
                    !key[offset..<(offset + length)].elementsEqual(literal)
                {
                    self.tree.seek(PathKeyEncoding.subtreeEnd(Array(key[..<(offset + length)])))
                    continue outer
                }
                if level == depth - 1 { locationEnd = offset + length }
                offset += length
            }
            return (Array(key[..<offset]), depth == 0 ? 0 : locationEnd)
        }
        try TreeReader.check(self.tree)
        return nil
    }
}

extension IndexDefinition {
    /// The entry (key, value) of a scanned child.
    package func entry(_ child: IndexChildScan.Child) -> (key: [UInt8], value: [UInt8]) {
        let key = self.entryKey(
            location: Array(child.childPrefix[..<child.locationEnd]), sortValue: self.sortValue(of: child.value),
            childSegment: child.childPrefix[child.locationEnd...])
        return (key, IndexDefinition.entryValue(child.value))
    }
}
