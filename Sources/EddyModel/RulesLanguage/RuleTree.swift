// One version of the tree as security rules see it (`root`/`data` before a write, `newData`
// after it), read lazily: a rule reads only the locations it names, so a rule over
// `auth.uid` reads nothing and `data.child('owner').val()` reads one small subtree, however
// large the database is.
//
// Three sources:
// - a value held in memory (tests, small trees);
// - a reader function (the engine's storage, at one consistent state);
// - an overlay: a base version with writes on top (`newData` of a set, push or multi-path
//   update), computed from the base's values at the locations read, never the whole tree.
// Invariants: the overlay's writes do not nest (an update's paths are disjoint; a set has one);
// a read that fails makes the rule that needed it fail (`RuleEvaluationError`), never the request
// crash. Each version is used by one thread at a time (one access decision), and caches what it
// read, so `data.val()` twice reads storage once.

public final class RuleTree: @unchecked Sendable {
    // @unchecked: `cache` is touched only by the one thread evaluating a decision.
    private enum Source {
        case value(Value)
        case reader((Path) throws -> Value, priority: ((Path) throws -> Value)?)
        case overlay(RuleTree, [(path: Path, value: Value)], exported: [(path: Path, value: Value)])
    }

    private let source: Source
    private var cache: [Path: Value] = [:]

    /// A tree held in memory.
    public init(_ value: Value) {
        self.source = .value(value)
    }

    /// A tree read through `read` (the whole value at a path, without priorities) and
    /// `readPriority` (a node's priority; nil: every priority reads null); errors fail the rule.
    public init(reading read: @escaping (Path) throws -> Value, readingPriority: ((Path) throws -> Value)? = nil) {
        self.source = .reader(read, priority: readingPriority)
    }

    /// `base` with each value of `writes` set at its path (`.null` removes). Paths must not
    /// nest. `exported`: the same writes in the export form (priorities kept; a
    /// `<path>/.priority` write sets one node's), for `priority(at:)`; empty when they hold none.
    public init(base: RuleTree, writing writes: [(path: Path, value: Value)], exported: [(path: Path, value: Value)] = []) {
        self.source = .overlay(base, writes, exported: exported)
    }

    /// The priority of the node at `path` in this version (`.null`: none). A value held in
    /// memory may be in the export form.
    public func priority(at path: Path) throws(RuleEvaluationError) -> Value {
        switch self.source {
        case .value(let value):
            return value.child(at: path).priority
        case .reader(_, let readPriority):
            guard let readPriority else { return .null }
            do {
                return try readPriority(path)
            } catch {
                throw RuleEvaluationError(message: "reading the priority of \(path) failed: \(error)")
            }
        case .overlay(let base, let writes, let exported):
            for write in exported {
                if write.path.lastKey == Value.priorityKey, write.path.parent == path {
                    let exists = !(try self.value(at: path)).isNull
                    return write.value.isPriority && exists ? write.value : .null
                }
                if write.path.lastKey != Value.priorityKey, write.path.isAncestorOrSelf(of: path) {
                    return write.value.child(at: Path(validatedKeys: Array(path.keys.dropFirst(write.path.depth)))).priority
                }
            }
            // A write at or above the path without priorities replaced it whole.
            if writes.contains(where: { $0.path.isAncestorOrSelf(of: path) && $0.path.lastKey != Value.priorityKey }) { return .null }
            return try base.priority(at: path)
        }
    }

    /// The value at `path` in this version.
    public func value(at path: Path) throws(RuleEvaluationError) -> Value {
        switch self.source {
        case .value(let value):
            return value.child(at: path)
        case .reader(let read, _):
            if let cached = self.cache[path] { return cached }
            let value: Value
            do {
                value = try read(path)
            } catch {
                throw RuleEvaluationError(message: "reading \(path) failed: \(error)")
            }
            self.cache[path] = value
            return value
        case .overlay(let base, let writes, _):
            // A write at or above `path` decides it alone.
            for write in writes where write.path.isAncestorOrSelf(of: path) {
                return write.value.child(at: Path(validatedKeys: Array(path.keys.dropFirst(write.path.depth))))
            }
            var value = try base.value(at: path)
            for write in writes where path.isAncestorOrSelf(of: write.path) {
                value.set(write.value, at: Path(validatedKeys: Array(write.path.keys.dropFirst(path.depth))))
            }
            return value
        }
    }
}
