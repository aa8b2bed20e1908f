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
// Entry changes are collected per commit group and written in key order when the group ends,
// appended to a plain copy of the batch, or added to the batch itself before live-event windows
// read the index family through it (see "The group's pending entry changes" below). Owned by
// the committer thread.

import EddyModel
import EddyStorage
import EddyTree

package final class IndexMaintainer {
    let family: ColumnFamily
    let batch: WriteBatchWithIndex
    /// Every index that must be maintained (building and ready), set by the committer.
    package var definitions: [IndexDefinition] = []

    package init(family: ColumnFamily, batch: WriteBatchWithIndex) {
        self.family = family
        self.batch = batch
    }

    package enum Plan {
        /// p == d + 1.
        case child(IndexDefinition, childEnd: Int)
        /// p > d + 1; `oldSortValue` nil when the child did not exist.
        case insideChild(IndexDefinition, childEnd: Int, oldSortValue: Value?)
        /// p <= d.
        case subtree(IndexDefinition)
    }

    /// Reads what must be known before the change at `path` (encoded as `prefix`, whose
    /// segment `i` ends at `segmentEnds[i]`) is applied.
    package func prepare(path: Path, prefix: [UInt8], segmentEnds: [Int], tree: Iterator) throws(EddyError) -> [Plan] {
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
    package func finish(
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
                    if let oldKey { self.delete(oldKey) }
                    continue
                }
                let newKey = definition.entryKey(location: locationBytes, sortValue: definition.sortValue(of: new), childSegment: segment)
                if let oldKey, oldKey != newKey { self.delete(oldKey) }
                if newEntryValue == nil { newEntryValue = IndexDefinition.entryValue(new) }
                self.put(newKey, newEntryValue!)
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
                if let oldKey, oldKey != newKey { self.delete(oldKey) }
                if let newKey { self.put(newKey, value) }
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
                self.put(entryKey, IndexDefinition.entryValue(child))
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

    // MARK: The group's pending entry changes
    //
    // Entry changes of a commit group are collected here and written once, in key order, when
    // the group ends (`flushPending(into:)`): entries of different indexes and random sort
    // values would otherwise land all over the memtable's and the batch's skiplists, each insert
    // a fresh search; in order, each insert starts where the previous one ended. Within a group
    // the index family is read through the batch only by `deleteEntries`, which adds the
    // pending changes to what the database holds, and by live-event windows, after
    // `flushPending` has added them to the batch.

    private var pending: [(key: [UInt8], value: [UInt8]?)] = []
    /// `pending.count` when the current write began (see `setSavePoint`).
    private var savePoint = 0

    private func put(_ key: [UInt8], _ value: [UInt8]) { self.pending.append((key, value)) }

    private func delete(_ key: [UInt8]) { self.pending.append((key, nil)) }

    /// Marks the start of a write; `rollbackToSavePoint` drops what it added.
    package func setSavePoint() { self.savePoint = self.pending.count }

    package func rollbackToSavePoint() { self.pending.removeSubrange(self.savePoint...) }

    /// Adds the pending entry changes to the batch in key order (the last change of a key wins).
    /// Called before anything reads the index family through the batch (live-event windows).
    /// What it added is covered by the batch's own save point, so a rollback of the current
    /// write needs nothing from here.
    package func flushPending() {
        self.drainPending { key, value in
            if let value { self.batch.put(self.family, key, value) } else { self.batch.delete(self.family, key) }
        }
    }

    /// Adds the pending entry changes to `plain` (a copy of the batch, `WriteBatch(copying:)`)
    /// in key order, not to the batch: when a group ends nothing reads them before the write,
    /// and the batch's own index would cost a skiplist insert per entry.
    package func flushPending(into plain: WriteBatch) {
        self.drainPending { key, value in
            if let value { plain.put(self.family, key, value) } else { plain.delete(self.family, key) }
        }
    }

    package var hasPending: Bool { !self.pending.isEmpty }

    /// Calls `apply` for the last pending change of each key, in key order, and empties the
    /// pending changes.
    private func drainPending(_ apply: ([UInt8], [UInt8]?) -> Void) {
        defer {
            self.pending.removeAll(keepingCapacity: true)
            self.savePoint = 0
        }
        guard !self.pending.isEmpty else { return }
        self.pending.withUnsafeBufferPointer { pending in
            // Stable by position within equal keys, so the last change of a key is the last of
            // its run. (Through the buffer: no access check of `self.pending` per comparison.)
            let order = pending.indices.sorted { a, b in
                let c = pending[a].key.withUnsafeBytes { x in pending[b].key.withUnsafeBytes { compareBytes(x, $0) } }
                return c < 0 || (c == 0 && a < b)
            }
            for (n, i) in order.enumerated() {
                if n + 1 < order.count, pending[order[n + 1]].key == pending[i].key { continue }
                apply(pending[i].key, pending[i].value)
            }
        }
    }

    private func deleteEntries(under keyPrefix: [UInt8]) throws(EddyError) {
        // What the database holds (the batch holds no index changes of this group yet) ...
        let iterator = self.batch.makeIterator(self.family)
        var live = Set<[UInt8]>()
        iterator.seek(keyPrefix, within: keyPrefix)
        while iterator.isValid, iterator.keyHasPrefix(keyPrefix) {
            live.insert(iterator.key)
            iterator.next()
        }
        do {
            try iterator.checkError()
        } catch {
            throw EngineErrors.storage(error, while: "reading index entries")
        }
        // ... changed by this group's earlier writes.
        for change in self.pending where change.key.starts(with: keyPrefix) {
            if change.value == nil { live.remove(change.key) } else { live.insert(change.key) }
        }
        for key in live { self.delete(key) }
    }

    package enum BoundedChild {
        case absent
        case value(Value, entryValue: [UInt8])
        case tooLarge
    }

    /// The child at `childPrefix` when it has at most `Limits.indexCoverLeavesMax` leaves.
    static func readBoundedChild(_ tree: Iterator, childPrefix: [UInt8]) throws(EddyError) -> BoundedChild {
        tree.seek(childPrefix, within: childPrefix)
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
        tree.seek(childPrefix, within: childPrefix)
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
            tree.seek(target, within: target)
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
