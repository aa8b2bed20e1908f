// Priorities in a `Value`: Firebase's export form, which is how priorities travel inside the
// engine (writes, log entries, before-images) and how `format=export` answers.
//
// Export form (invariants of a normalized value that holds priorities):
// - an object with a priority has a `.priority` member beside its children;
// - a primitive with a priority is `{".value": v, ".priority": p}` (exactly those two keys);
// - a priority is a finite number or a string (a null priority is no `.priority` member), and
//   only a node that exists has one: an object whose only member is `.priority` is null.
// Everything that answers data the way Firebase's REST API and SDKs read it by default strips
// the form (`withoutPriorities`). Priority order: no priority first, then numbers ascending,
// then strings, ties by key (`ValueOrder` on the priority values gives exactly that).

extension Value {
    public static let priorityKey = ".priority"
    public static let wrappedValueKey = ".value"

    /// This node's own priority (`.null` when none).
    public var priority: Value {
        if case .object(let children) = self { return children[Self.priorityKey] ?? .null }
        return .null
    }

    /// True when a `.priority` member exists at any depth. Walks with an explicit stack.
    public var holdsPriorities: Bool {
        guard case .object = self else { return false }
        var stack = [self]
        while let node = stack.popLast() {
            guard case .object(let children) = node else { continue }
            if children[Self.priorityKey] != nil { return true }
            for child in children.values { if case .object = child { stack.append(child) } }
        }
        return false
    }

    /// The value as Firebase reads it without `format=export`: every `.priority` dropped and
    /// every `{".value": v}` replaced by `v`. The value itself (no copy) when it holds none.
    public var withoutPriorities: Value {
        self.holdsPriorities ? self.strippingPriorities() : self
    }

    /// Recursion depth is bounded by the nesting bound every value was parsed under.
    private func strippingPriorities() -> Value {
        guard case .object(let children) = self else { return self }
        if let wrapped = children[Self.wrappedValueKey] { return wrapped }
        var kept: [String: Value] = [:]
        kept.reserveCapacity(children.count)
        for (key, child) in children where key != Self.priorityKey { kept[key] = child.strippingPriorities() }
        return .object(kept)
    }

    /// Gives the node at `path` of this value (export form) `priority` (a number or string;
    /// `.null` removes it). A missing node gets none: empty nodes have no priority. O(depth)
    /// when the value's storage is not shared.
    public mutating func setPriority(_ priority: Value, at path: Path) {
        self.setPriority(priority, keys: path.keys[...])
    }

    private mutating func setPriority(_ priority: Value, keys: ArraySlice<String>) {
        guard let first = keys.first else {
            self = self.withOwnPriority(priority)
            return
        }
        guard case .object(var children) = self, let child = children[first], first != Self.priorityKey else { return }
        self = .null  // `children` uniquely owned
        var updated = child
        updated.setPriority(priority, keys: keys.dropFirst())
        children[first] = updated
        self = .object(children)
    }

    /// This node with its own priority replaced (`.null`: removed), in export form.
    public func withOwnPriority(_ priority: Value) -> Value {
        switch self {
        case .null:
            return .null
        case .bool, .number, .wideInteger, .string:
            return priority.isNull ? self : .object([Self.wrappedValueKey: self, Self.priorityKey: priority])
        case .object(var children):
            if let wrapped = children[Self.wrappedValueKey] { return wrapped.withOwnPriority(priority) }
            if children[WriteValidator.serverValueKey] != nil {  // resolves to a primitive
                return priority.isNull ? self : .object([Self.wrappedValueKey: self, Self.priorityKey: priority])
            }
            if priority.isNull {
                children.removeValue(forKey: Self.priorityKey)
            } else {
                children[Self.priorityKey] = priority
            }
            return children.isEmpty ? .null : .object(children)
        }
    }

    /// A valid stored priority: a finite number or a string (null means none).
    public var isPriority: Bool {
        switch self {
        case .number(let n): return n.isFinite
        case .wideInteger, .string: return true
        default: return false
        }
    }

    /// This value (export form) with `newValue` (export form) written at `path` the way the
    /// committer writes it: a `<node>/.priority` path sets the node's priority (nothing when the
    /// node is empty), writing below a primitive keeps the primitive's priority, and a node left
    /// with nothing but its priority is null. What replaying a log gives (`Engine.verify`).
    public mutating func setExport(_ newValue: Value, at path: Path) {
        if path.lastKey == Self.priorityKey, let node = path.parent {
            let current = self.child(at: node)
            guard !current.isNull else { return }
            self.set(current.withOwnPriority(newValue.isPriority ? newValue : .null), at: node)
            return
        }
        self.setExport(newValue, keys: path.keys[...])
    }

    private mutating func setExport(_ newValue: Value, keys: ArraySlice<String>) {
        guard let first = keys.first else {
            self = newValue
            return
        }
        var children: [String: Value]
        if case .object(let existing) = self, existing[Self.wrappedValueKey] == nil {
            children = existing
            self = .null  // `children` uniquely owned
        } else if newValue.isNull {
            return  // removing below a primitive (or nothing) changes nothing
        } else {
            // A primitive ancestor is replaced by the new object, which keeps its priority.
            let priority = self.priority
            children = priority.isNull ? [:] : [Self.priorityKey: priority]
        }
        var child = children.removeValue(forKey: first) ?? .null
        child.setExport(newValue, keys: keys.dropFirst())
        if !child.isNull { children[first] = child }
        let empty = children.isEmpty || (children.count == 1 && children[Self.priorityKey] != nil)
        self = empty ? .null : .object(children)
    }
}
