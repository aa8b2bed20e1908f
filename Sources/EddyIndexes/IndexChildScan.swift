// Walks the tree in key order and yields every child of every location an index's pattern
// matches, starting at a tree key. Used by online builds (resumable: `resumeKey` is where the
// next call continues) and by `verify()`. Subtrees a literal pattern segment rules out are
// skipped with one seek; the scan never leaves the pattern's literal key prefix.

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
            let childPrefix = Array(key[..<offset])
            // Leaves the iterator on the first key after the child.
            let value = try TreeReader.readSubtree(self.tree, prefix: childPrefix, positioned: self.resumed).value
            self.resumed = true
            return Child(childPrefix: childPrefix, locationEnd: depth == 0 ? 0 : locationEnd, value: value)
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
