// The oracle for model-based engine tests: the whole database as one in-memory `Value`.
// Deliberately naive (every write rebuilds the touched spine with `Value.setting`), so it is
// easy to believe; engine reads must match it exactly.

import EddyModel

public struct ReferenceModel: Sendable, Equatable {
    /// The whole tree, always normalized (no nulls, no empty objects).
    public private(set) var root: Value

    public init(root: Value = .null) {
        self.root = root.normalized()
    }

    /// The value at `path`, `.null` when absent.
    public func get(_ path: Path) -> Value {
        self.root.child(at: path)
    }

    /// Replaces the subtree at `path` (Firebase `set` / REST PUT). `value` must already be
    /// normalized; `.null` deletes. Writing below a primitive replaces that primitive.
    public mutating func set(_ path: Path, _ value: Value) {
        precondition(value == value.normalized(), "ReferenceModel.set expects a normalized value")
        self.root = self.root.setting(value, at: path)
    }

    /// Firebase `update` / REST PATCH: each (relative path, value) pair is set in turn under `path`.
    public mutating func update(_ path: Path, _ children: [(Path, Value)]) {
        for (relative, value) in children {
            self.set(path.appending(relative), value)
        }
    }

    /// Deletes the subtree at `path` (REST DELETE).
    public mutating func remove(_ path: Path) {
        self.set(path, .null)
    }
}
