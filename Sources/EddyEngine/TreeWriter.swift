// Turns one change (set the value at an absolute path) into `tree` record puts and deletes in
// the committer's write batch, and records what it replaced.
//
// Invariants kept:
// 1. A primitive never has descendants: writing below a primitive deletes it first (its old
//    value becomes a before-image); writing at a path deletes every leaf below it.
// 2. Reads go through the batch, so a change sees the earlier changes of its group.
// Server values are resolved here, against the value being replaced.

import EddyModel
import EddyStorage

struct TreeWriter {
    let tree: ColumnFamily
    let batch: WriteBatchWithIndex

    /// The current value at `path` as the batch would leave it (`.null` when a primitive
    /// ancestor holds the location).
    func currentValue(at path: Path) throws(EddyError) -> Value {
        try TreeReader.readSubtree(self.batch.makeIterator(self.tree), prefix: PathKeyEncoding.encode(path)).value
    }

    /// Sets `value` (normalized, may contain server values) at `path`. Returns the resolved
    /// value and appends before-images.
    func apply(
        path: Path, value: Value, nowMilliseconds: UInt64, before: inout [LogEntry.BeforeImage]
    ) throws(EddyError) -> Value {
        var ancestorEnds: [Int] = []
        var prefix: [UInt8] = []
        for key in path.keys {
            ancestorEnds.append(prefix.count)
            PathKeyEncoding.appendSegment(key, to: &prefix)
        }
        let (old, oldKeys) = try TreeReader.readSubtree(self.batch.makeIterator(self.tree), prefix: prefix, collectKeys: true)
        before.append(LogEntry.BeforeImage(path: path, value: old))
        let resolved = Self.containsServerValue(value) ? Self.resolve(value, old: old, now: nowMilliseconds) : value
        for key in oldKeys { self.batch.delete(self.tree, key) }
        guard !resolved.isNull else { return .null }
        // A primitive at an ancestor must go: at most one can exist (invariant 1).
        if oldKeys.isEmpty {
            for (depth, end) in ancestorEnds.enumerated() {
                let ancestorKey = Array(prefix[..<end])
                let existing: [UInt8]?
                do {
                    existing = try self.batch.get(self.tree, ancestorKey)
                } catch {
                    throw EngineErrors.storage(error, while: "reading \(path.abbreviated)")
                }
                if let existing {
                    let leaf = try LeafEncoding.decode(existing)
                    before.append(LogEntry.BeforeImage(path: Path(validatedKeys: Array(path.keys[..<depth])), value: leaf))
                    self.batch.delete(self.tree, ancestorKey)
                    break
                }
            }
        }
        self.putLeaves(resolved, prefix: prefix)
        return resolved
    }

    private func putLeaves(_ value: Value, prefix: [UInt8]) {
        var stack: [(Value, [UInt8])] = [(value, prefix)]
        while let (node, key) = stack.popLast() {
            switch node {
            case .null: continue
            case .bool, .number, .string: self.batch.put(self.tree, key, LeafEncoding.encode(node))
            case .object(let children):
                for (childKey, child) in children {
                    var childPrefix = key
                    PathKeyEncoding.appendSegment(childKey, to: &childPrefix)
                    stack.append((child, childPrefix))
                }
            }
        }
    }

    static func containsServerValue(_ value: Value) -> Bool {
        var stack = [value]
        while let node = stack.popLast() {
            guard case .object(let children) = node else { continue }
            if children[WriteValidator.serverValueKey] != nil { return true }
            stack.append(contentsOf: children.values)
        }
        return false
    }

    /// Replaces each server value by its result. Recursion depth is bounded by
    /// `Limits.pathDepthMax` (values were validated).
    static func resolve(_ value: Value, old: Value, now: UInt64) -> Value {
        if let op = WriteValidator.serverValue(value) {
            switch op {
            case .timestamp: return .number(Double(now))
            case .increment(let n):
                if case .number(let current) = old { return .number(current + n) }
                return .number(n)
            }
        }
        guard case .object(let children) = value else { return value }
        var out: [String: Value] = [:]
        for (key, child) in children { out[key] = resolve(child, old: old[key], now: now) }
        return .object(out)
    }
}
