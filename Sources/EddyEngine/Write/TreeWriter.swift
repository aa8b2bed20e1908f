// Turns one change (set the value at an absolute path) into `tree` record puts and deletes in
// the committer's write batch, and records what it replaced. Owned by the committer thread.
//
// Invariants kept:
// 1. A primitive never has descendants: writing below a primitive deletes it first (its old
//    value becomes a before-image); writing at a path deletes every leaf below it.
// 2. Reads go through the batch, so a change sees the earlier changes of its group.
// 3. Index entries of every index change in the same batch (`IndexMaintainer`).
// 4. Priorities (export form in `value`, `Value+Priority.swift`) go to the `priority` family,
//    never to `tree`: a write at a path replaces the priorities at and below it, a
//    `<path>/.priority` write sets one node's (nothing when the node is empty), writing below
//    a primitive keeps the primitive's priority (as Firebase does), and a removal that empties
//    an ancestor drops the ancestor's. Before-images are in export form, so writing them back
//    (a discarded entry) restores priorities too; an emptied ancestor's dropped priority is
//    its own image at `<ancestor>/.priority`, after the change's image.
// Server values are resolved here, against the value being replaced.
//
// Two costs are paid once instead of per write (the committer's CPU bounds group commit):
// - one batch iterator per group (`beginGroup`/`endGroup`): the delta part of a
//   batch-with-base iterator sees batch updates made after it was created, and every read
//   seeks first, so reusing it is safe; it is dropped before the batch is cleared.
// - `keysWithoutPrimitive`: encoded paths known to hold no primitive, so the ancestor check of
//   repeated writes under the same parent costs a hash lookup. Only the committer writes, and
//   every leaf put removes its key, so an entry stays true across groups; it is cleared after
//   a rollback and when it reaches `keysWithoutPrimitiveMax`.

import EddyIndexes
import EddyEvents
import EddyModel
import EddyStorage
import EddyTree

final class TreeWriter: EventGroupReads {
    let tree: ColumnFamily
    let index: ColumnFamily
    let batch: WriteBatchWithIndex
    /// Index entries change with the tree, in the same batch.
    let indexes: IndexMaintainer
    /// The `priority` family (nil only on a read-only open of an older database, which
    /// writes nothing).
    let priority: ColumnFamily?
    /// False while the `priority` family is known to be empty, so writes skip reading it (the
    /// common case: most databases hold no priority). Set at open and by the first put; never
    /// cleared, so it is never wrong in the direction that would lose a record.
    private(set) var mayHoldPriorities: Bool
    private var iterator: Iterator?
    private var priorityIterator: Iterator?
    /// Slices compare by their elements, so a lookup needs no copy of the prefix.
    private var keysWithoutPrimitive: Set<KeyBytes> = []
    private let keysWithoutPrimitiveMax = 4096
    /// Encoded paths where a write of this group deleted at least `largeRemovalLeaves` leaves:
    /// the committer compacts them once the group is written (`takeLargeRemovals`). At most
    /// `largeRemovalsMax` per group (a compaction only speeds reads; one skipped loses nothing).
    private var largeRemovals: [[UInt8]] = []
    static let largeRemovalLeaves = 10_000
    static let largeRemovalsMax = 8

    init(tree: ColumnFamily, index: ColumnFamily, priority: ColumnFamily?, mayHoldPriorities: Bool, batch: WriteBatchWithIndex) {
        self.tree = tree
        self.index = index
        self.priority = priority
        self.mayHoldPriorities = mayHoldPriorities
        self.batch = batch
        self.indexes = IndexMaintainer(family: index, batch: batch)
    }

    func beginGroup() {
        precondition(self.iterator == nil, "beginGroup twice")
        self.iterator = self.batch.makeIterator(self.tree)
    }

    /// Must run before the batch is cleared or written.
    func endGroup() {
        self.iterator = nil
        self.priorityIterator = nil
    }

    /// The group's iterator over `priority` (batch and database), made when first needed.
    var groupPriorityIterator: Iterator {
        if let iterator = self.priorityIterator { return iterator }
        let iterator = self.batch.makeIterator(self.priority!)
        self.priorityIterator = iterator
        return iterator
    }

    /// Call after the batch was rolled back: cached facts may describe undone changes.
    func forgetCachedFacts() {
        self.keysWithoutPrimitive.removeAll(keepingCapacity: true)
    }

    /// The large removals of the group (see `largeRemovals`), forgotten here. A rolled-back
    /// write's may be among them: compacting a range costs time only, never data.
    func takeLargeRemovals() -> [[UInt8]] {
        defer { self.largeRemovals.removeAll() }
        return self.largeRemovals
    }

    var groupIterator: Iterator {
        guard let iterator = self.iterator else { preconditionFailure("TreeWriter used outside a group") }
        return iterator
    }

    var indexDefinitions: [IndexDefinition] { self.indexes.definitions }

    func makeGroupIndexIterator() -> Iterator {
        self.indexes.flushPending()
        return self.batch.makeIterator(self.index)
    }

    /// The current value at `path` as the batch would leave it (`.null` when a primitive
    /// ancestor holds the location).
    func currentValue(at path: Path) throws(EddyError) -> Value {
        try TreeReader.readSubtree(self.groupIterator, prefix: PathKeyEncoding.encode(path)).value
    }

    /// The current value at `path` in export form (`.priority` members) as the batch would
    /// leave it: what a conditional write's ETag is of.
    func currentExportValue(at path: Path) throws(EddyError) -> Value {
        let prefix = PathKeyEncoding.encode(path)
        guard self.mayHoldPriorities else { return try TreeReader.readSubtree(self.groupIterator, prefix: prefix).value }
        return try PriorityRecords.exportValue(tree: self.groupIterator, priorities: self.groupPriorityIterator, prefix: prefix)
    }

    var groupPriorityIteratorIfAny: Iterator? { self.mayHoldPriorities ? self.groupPriorityIterator : nil }

    /// The priority of the node at `path` as the batch would leave it (`.null`: none).
    func currentPriority(at path: Path) throws(EddyError) -> Value {
        guard self.mayHoldPriorities else { return .null }
        return try PriorityRecords.priority(self.groupPriorityIterator, at: PathKeyEncoding.encode(path))
    }

    /// Sets `value` (normalized, may contain server values) at `path`. Returns the resolved
    /// value and appends before-images.
    func apply(
        path: Path, value: Value, nowMilliseconds: UInt64, before: inout [LogEntry.BeforeImage]
    ) throws(EddyError) -> Value {
        if path.lastKey == Value.priorityKey, let node = path.parent {
            return try self.applyPriority(of: node, value, nowMilliseconds: nowMilliseconds, before: &before)
        }
        var ancestorEnds: [Int] = []
        ancestorEnds.reserveCapacity(path.depth)
        var prefix: [UInt8] = []
        prefix.reserveCapacity(64)
        for key in path.keys {
            ancestorEnds.append(prefix.count)
            PathKeyEncoding.appendSegment(key, to: &prefix)
        }
        var segmentEnds: [Int] = []
        var plans: [IndexMaintainer.Plan] = []
        if !self.indexes.definitions.isEmpty {
            segmentEnds = Array(ancestorEnds.dropFirst()) + [prefix.count]
            plans = try self.indexes.prepare(path: path, prefix: prefix, segmentEnds: segmentEnds, tree: self.groupIterator)
        }
        let (old, oldKeys) = try TreeReader.readSubtree(self.groupIterator, prefix: prefix, collectKeys: true)
        var oldPriorities: [PriorityRecords.Record] = []
        if self.mayHoldPriorities, !old.isNull {
            oldPriorities = try PriorityRecords.records(self.groupPriorityIterator, under: prefix)
        }
        let oldExport = oldPriorities.isEmpty ? old : try PriorityRecords.merging(oldPriorities, into: old, prefix: prefix)
        before.append(LogEntry.BeforeImage(path: path, value: oldExport))
        let resolved =
            Self.containsServerValue(value) ? try Self.resolve(value, old: oldExport, now: nowMilliseconds, path: path) : value
        for key in oldKeys { self.batch.delete(self.tree, key) }
        for record in oldPriorities { self.batch.delete(self.priority!, record.key) }
        if oldKeys.count >= Self.largeRemovalLeaves, self.largeRemovals.count < Self.largeRemovalsMax {
            self.largeRemovals.append(prefix)
        }
        if !resolved.isNull {
            if oldKeys.isEmpty {
                try self.removePrimitiveAncestor(of: path, prefix: prefix, ancestorEnds: ancestorEnds, before: &before)
            }
            self.putLeaves(resolved, prefix: prefix)
        } else if !old.isNull, self.mayHoldPriorities {
            try self.dropEmptiedAncestorPriorities(of: path, prefix: prefix, ancestorEnds: ancestorEnds, before: &before)
        }
        if !plans.isEmpty {
            try self.indexes.finish(
                plans, path: path, prefix: prefix, segmentEnds: segmentEnds, old: old, new: resolved.withoutPriorities,
                tree: self.groupIterator)
        }
        return resolved
    }

    /// A `<node>/.priority` write: sets (or with null removes) the node's own priority; an
    /// empty node keeps none, so there it changes nothing. The image is the old priority at
    /// `<node>/.priority`. Returns the priority stored (`.null` when none).
    private func applyPriority(
        of node: Path, _ value: Value, nowMilliseconds: UInt64, before: inout [LogEntry.BeforeImage]
    ) throws(EddyError) -> Value {
        let prefix = PathKeyEncoding.encode(node)
        let iterator = self.groupIterator
        iterator.seek(prefix, within: prefix)
        let exists = iterator.isValid && iterator.keyHasPrefix(prefix)
        try TreeReader.check(iterator)
        let old = self.mayHoldPriorities ? try PriorityRecords.priority(self.groupPriorityIterator, at: prefix) : .null
        before.append(LogEntry.BeforeImage(path: node.appending(Value.priorityKey), value: old))
        guard exists else { return .null }
        let resolved = WriteValidator.serverValue(value) != nil ? try Self.resolve(value, old: old, now: nowMilliseconds, path: node) : value
        if resolved.isPriority {
            self.putPriority(resolved, key: prefix)
        } else if !old.isNull {
            self.batch.delete(self.priority!, prefix)
        }
        return resolved.isPriority ? resolved : .null
    }

    private func putPriority(_ priority: Value, key: [UInt8]) {
        guard let family = self.priority else { preconditionFailure("a priority written on a read-only open") }
        self.mayHoldPriorities = true
        self.batch.put(family, key, LeafEncoding.encode(priority))
    }

    /// After a removal at `path` took a node away: each ancestor it left empty (deepest first)
    /// loses its priority, recorded as an image at `<ancestor>/.priority`.
    private func dropEmptiedAncestorPriorities(
        of path: Path, prefix: [UInt8], ancestorEnds: [Int], before: inout [LogEntry.BeforeImage]
    ) throws(EddyError) {
        let iterator = self.groupIterator
        for (depth, end) in ancestorEnds.enumerated().reversed() where depth > 0 || end == 0 {
            let ancestor = Array(prefix[..<end])
            iterator.seek(ancestor, within: ancestor)
            let isEmpty = !(iterator.isValid && iterator.keyHasPrefix(ancestor))
            try TreeReader.check(iterator)
            guard isEmpty else { return }
            let priority = try PriorityRecords.priority(self.groupPriorityIterator, at: ancestor)
            if !priority.isNull {
                before.append(
                    LogEntry.BeforeImage(path: Path(validatedKeys: Array(path.keys[..<depth])).appending(Value.priorityKey), value: priority))
                self.batch.delete(self.priority!, ancestor)
            }
        }
    }

    /// Deletes the primitive at an ancestor of `path`, if any (at most one exists, by
    /// invariant 1), recording its before-image.
    private func removePrimitiveAncestor(
        of path: Path, prefix: [UInt8], ancestorEnds: [Int], before: inout [LogEntry.BeforeImage]
    ) throws(EddyError) {
        for (depth, end) in ancestorEnds.enumerated() {
            if self.keysWithoutPrimitive.contains(KeyBytes(prefix[..<end])) { continue }
            let ancestorKey = Array(prefix[..<end])
            let existing: [UInt8]?
            do {
                existing = try self.batch.get(self.tree, ancestorKey)
            } catch {
                throw EngineErrors.storage(error, while: "reading \(path.abbreviated)")
            }
            guard let existing else {
                if self.keysWithoutPrimitive.count >= self.keysWithoutPrimitiveMax { self.forgetCachedFacts() }
                self.keysWithoutPrimitive.insert(KeyBytes(ancestorKey[...]))
                continue
            }
            let leaf = try LeafEncoding.decode(existing)
            // The primitive keeps its priority (the object replacing it has it), so the image
            // holds it too: writing the image back restores it.
            let priority = self.mayHoldPriorities ? try PriorityRecords.priority(self.groupPriorityIterator, at: ancestorKey) : .null
            before.append(
                LogEntry.BeforeImage(path: Path(validatedKeys: Array(path.keys[..<depth])), value: leaf.withOwnPriority(priority)))
            self.batch.delete(self.tree, ancestorKey)
            return
        }
    }

    private func putLeaves(_ value: Value, prefix: [UInt8]) {
        var stack: [(Value, [UInt8])] = [(value, prefix)]
        while let (node, key) = stack.popLast() {
            switch node {
            case .null: continue
            case .bool, .number, .wideInteger, .string:
                if !self.keysWithoutPrimitive.isEmpty { self.keysWithoutPrimitive.remove(KeyBytes(key[...])) }
                self.batch.put(self.tree, key, LeafEncoding.encode(node))
            case .object(let children):
                for (childKey, child) in children {
                    if childKey == Value.priorityKey {
                        if child.isPriority { self.putPriority(child, key: key) }
                        continue
                    }
                    if childKey == Value.wrappedValueKey {
                        stack.append((child, key))  // the node's own primitive
                        continue
                    }
                    var childPrefix = key
                    PathKeyEncoding.appendSegment(childKey, to: &childPrefix)
                    stack.append((child, childPrefix))
                }
            }
        }
    }

    static func containsServerValue(_ value: Value) -> Bool {
        guard case .object = value else { return false }
        var stack = [value]
        while let node = stack.popLast() {
            guard case .object(let children) = node else { continue }
            if children[WriteValidator.serverValueKey] != nil { return true }
            stack.append(contentsOf: children.values)
        }
        return false
    }

    /// Replaces each server value by its result. Recursion depth is bounded by
    /// `Limits.pathDepthMax` (values were validated). An increment whose result is not finite
    /// (e.g. 1e308 + 1e308) is refused: only finite numbers may be stored. `path` is only for
    /// that message. `old` may be in export form: an increment of a `.priority` member adds to
    /// the node's old priority.
    static func resolve(_ value: Value, old: Value, now: UInt64, path: Path) throws(EddyError) -> Value {
        if let op = WriteValidator.serverValue(value) {
            switch op {
            case .timestamp: return .number(Double(now))
            case .increment(let delta):
                var plain = old
                if case .object(let children) = old, let wrapped = children[Value.wrappedValueKey] { plain = wrapped }
                guard let sum = plain.adding(delta) else { return delta }
                guard sum.doubleValue?.isFinite == true else {
                    throw EddyError(
                        .invalidValue,
                        // The stored value stays out of the message: the caller may not read it.
                        "increment by \(JSONWriter.string(delta)) at \(path.abbreviated) would make the stored number non-finite; only finite numbers can be stored")
                }
                return sum
            }
        }
        guard case .object(let children) = value else { return value }
        var out: [String: Value] = [:]
        for (key, child) in children {
            switch key {
            // A wrapped primitive replaces the node's own value.
            case Value.wrappedValueKey: out[key] = try resolve(child, old: old, now: now, path: path)
            case Value.priorityKey: out[key] = try resolve(child, old: old.priority, now: now, path: path)
            default: out[key] = try resolve(child, old: old[key], now: now, path: path.appending(key))
            }
        }
        return .object(out)
    }
}

/// An encoded key in `TreeWriter.keysWithoutPrimitive`. Hashed as one run of bytes: an
/// `ArraySlice<UInt8>` hashes element by element, one hasher call per byte, and every leaf a
/// write puts is looked up here (1.6% of the committer's samples under 64 native writers).
/// Equality is the synthesized one: the slices' elements.
struct KeyBytes: Hashable {
    let bytes: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
    }

    func hash(into hasher: inout Hasher) {
        self.bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
