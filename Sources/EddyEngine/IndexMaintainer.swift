// Keeps every index (building or ready) in step with the tree: for each change the committer
// applies, the entries it affects are deleted and rewritten in the same write batch.
//
// A change sets the value at path P (depth p). For an index whose locations have depth d:
// - p == d + 1 (P is a child: push, set or remove of one child): the old and new child values
//   are the change's own before and after values; no extra read.
// - p > d + 1 (a change inside a child, e.g. `posts/p1/metrics/views`): the child's old sort
//   value is read before the change and the child is read again after it (at most
//   `Limits.indexCoverLeavesMax` leaves; a larger child's entry is not covered).
// - p <= d (P is a location or above it: a whole list or an ancestor replaced): every entry
//   under P is deleted and entries for the new value are written.
// Writing below a primitive ancestor is covered by the same cases: that primitive is either a
// child (p > d + 1: its entry is re-derived from the tree) or above every location (no entries).
// Owned by the committer thread.

import EddyModel
import EddyStorage

final class IndexMaintainer {
    let family: ColumnFamily
    let batch: WriteBatchWithIndex
    /// Every index that must be maintained (building and ready), set by the committer.
    var definitions: [IndexDefinition] = []

    init(family: ColumnFamily, batch: WriteBatchWithIndex) {
        self.family = family
        self.batch = batch
    }

    enum Plan {
        /// p == d + 1.
        case child(IndexDefinition, childEnd: Int)
        /// p > d + 1; `oldSortValue` nil when the child did not exist.
        case insideChild(IndexDefinition, childEnd: Int, oldSortValue: Value?)
        /// p <= d.
        case subtree(IndexDefinition)
    }

    /// Reads what must be known before the change at `path` (encoded as `prefix`, whose
    /// segment `i` ends at `segmentEnds[i]`) is applied.
    func prepare(path: Path, prefix: [UInt8], segmentEnds: [Int], tree: Iterator) throws(EddyError) -> [Plan] {
        var plans: [Plan] = []
        let keys = path.keys[...]
        for definition in self.definitions {
            let d = definition.depth
            if keys.count <= d {
                if definition.patternAccepts(keys) { plans.append(.subtree(definition)) }
            } else if definition.patternAccepts(keys[..<d]) {
                let childEnd = segmentEnds[d]
                if keys.count == d + 1 {
                    plans.append(.child(definition, childEnd: childEnd))
                } else {
                    let old = try Self.sortValue(tree, childPrefix: Array(prefix[..<childEnd]), definition)
                    plans.append(.insideChild(definition, childEnd: childEnd, oldSortValue: old))
                }
            }
        }
        return plans
    }

    /// Rewrites the affected entries after the change: `old` and `new` are the values at
    /// `path` before and after it.
    func finish(
        _ plans: [Plan], path: Path, prefix: [UInt8], segmentEnds: [Int], old: Value, new: Value, tree: Iterator
    ) throws(EddyError) {
        var newEntryValue: [UInt8]? = nil
        var reread: (childEnd: Int, child: BoundedChild)? = nil
        for plan in plans {
            switch plan {
            case .child(let definition, let childEnd):
                let locationBytes = Array(prefix[..<(definition.depth == 0 ? 0 : segmentEnds[definition.depth - 1])])
                let segment = prefix[locationBytes.count..<childEnd]
                let oldKey = old.isNull ? nil : definition.entryKey(location: locationBytes, sortValue: definition.sortValue(of: old), childSegment: segment)
                if new.isNull {
                    if let oldKey { self.batch.delete(self.family, oldKey) }
                    continue
                }
                let newKey = definition.entryKey(location: locationBytes, sortValue: definition.sortValue(of: new), childSegment: segment)
                if let oldKey, oldKey != newKey { self.batch.delete(self.family, oldKey) }
                if newEntryValue == nil { newEntryValue = IndexDefinition.entryValue(new) }
                self.batch.put(self.family, newKey, newEntryValue!)
            case .insideChild(let definition, let childEnd, let oldSortValue):
                let locationBytes = Array(prefix[..<(definition.depth == 0 ? 0 : segmentEnds[definition.depth - 1])])
                let segment = prefix[locationBytes.count..<childEnd]
                let childPrefix = Array(prefix[..<childEnd])
                let child: BoundedChild
                if let reread, reread.childEnd == childEnd {
                    child = reread.child
                } else {
                    child = try Self.readBoundedChild(tree, childPrefix: childPrefix)
                    reread = (childEnd, child)
                }
                let oldKey = oldSortValue.map { definition.entryKey(location: locationBytes, sortValue: $0, childSegment: segment) }
                let newKey: [UInt8]?
                let value: [UInt8]
                switch child {
                case .absent:
                    newKey = nil
                    value = []
                case .value(let childValue, let entryValue):
                    newKey = definition.entryKey(location: locationBytes, sortValue: definition.sortValue(of: childValue), childSegment: segment)
                    value = entryValue
                case .tooLarge:
                    let sort = try Self.sortValue(tree, childPrefix: childPrefix, definition) ?? .null
                    newKey = definition.entryKey(location: locationBytes, sortValue: sort, childSegment: segment)
                    value = IndexDefinition.uncovered
                }
                if let oldKey, oldKey != newKey { self.batch.delete(self.family, oldKey) }
                if let newKey { self.batch.put(self.family, newKey, value) }
            case .subtree(let definition):
                try self.deleteEntries(under: definition.keyPrefix + prefix)
                if !new.isNull {
                    var location = prefix
                    self.putEntries(definition, node: new, depth: path.depth, location: &location)
                }
            }
        }
    }

    /// Writes the entries of every location at or below the node (at depth `depth`, encoded as
    /// `location`) that the definition's pattern accepts. Recursion depth ≤ `pathDepthMax`.
    func putEntries(_ definition: IndexDefinition, node: Value, depth: Int, location: inout [UInt8]) {
        guard case .object(let children) = node else { return }
        if depth == definition.depth {
            var segment: [UInt8] = []
            for (key, child) in children {
                segment.removeAll(keepingCapacity: true)
                PathKeyEncoding.appendSegment(key, to: &segment)
                let entryKey = definition.entryKey(location: location, sortValue: definition.sortValue(of: child), childSegment: segment)
                self.batch.put(self.family, entryKey, IndexDefinition.entryValue(child))
            }
            return
        }
        let restore = location.count
        switch definition.declaration.location[depth] {
        case .key(let literal):
            guard let child = children[literal] else { return }
            PathKeyEncoding.appendSegment(literal, to: &location)
            self.putEntries(definition, node: child, depth: depth + 1, location: &location)
            location.removeSubrange(restore...)
        case .wildcard:
            for (key, child) in children {
                PathKeyEncoding.appendSegment(key, to: &location)
                self.putEntries(definition, node: child, depth: depth + 1, location: &location)
                location.removeSubrange(restore...)
            }
        }
    }

    private func deleteEntries(under keyPrefix: [UInt8]) throws(EddyError) {
        let iterator = self.batch.makeIterator(self.family)
        var keys: [[UInt8]] = []
        iterator.seek(keyPrefix)
        while iterator.isValid, iterator.keyHasPrefix(keyPrefix) {
            keys.append(iterator.key)
            iterator.next()
        }
        do {
            try iterator.checkError()
        } catch {
            throw EngineErrors.storage(error, while: "reading index entries")
        }
        for key in keys { self.batch.delete(self.family, key) }
    }

    enum BoundedChild {
        case absent
        case value(Value, entryValue: [UInt8])
        case tooLarge
    }

    /// The child at `childPrefix` when it has at most `Limits.indexCoverLeavesMax` leaves.
    static func readBoundedChild(_ tree: Iterator, childPrefix: [UInt8]) throws(EddyError) -> BoundedChild {
        tree.seek(childPrefix)
        var leaves = 0
        while tree.isValid, tree.keyHasPrefix(childPrefix) {
            leaves += 1
            if leaves > Limits.indexCoverLeavesMax { return .tooLarge }
            tree.next()
        }
        try TreeReader.check(tree)
        if leaves == 0 { return .absent }
        let value = try TreeReader.readSubtree(tree, prefix: childPrefix).value
        return .value(value, entryValue: IndexDefinition.entryValue(value))
    }

    /// The sort value of the child at `childPrefix` read from the tree; nil when the child
    /// does not exist. Objects read as `.object([:])` (they all rank the same).
    static func sortValue(_ tree: Iterator, childPrefix: [UInt8], _ definition: IndexDefinition) throws(EddyError) -> Value? {
        tree.seek(childPrefix)
        guard tree.isValid, tree.keyHasPrefix(childPrefix) else {
            try TreeReader.check(tree)
            return nil
        }
        let childIsLeaf = tree.withKey { $0.count == childPrefix.count }
        switch definition.declaration.on {
        case .value:
            if childIsLeaf { return try tree.withValue { bytes throws(EddyError) in try LeafEncoding.decode(bytes) } }
            return .object([:])
        case .child(let path):
            if childIsLeaf { return .null }
            let target = childPrefix + PathKeyEncoding.encode(path)
            tree.seek(target)
            guard tree.isValid, tree.keyHasPrefix(target) else {
                try TreeReader.check(tree)
                return .null
            }
            if tree.withKey({ $0.count == target.count }) {
                return try tree.withValue { bytes throws(EddyError) in try LeafEncoding.decode(bytes) }
            }
            return .object([:])
        }
    }
}
