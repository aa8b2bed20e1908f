// A JSON value as Firebase stores it.
//
// Invariants of a *normalized* value (what the engine stores and returns):
// 1. No object has a `.null` child and no object is empty: `{}` and nulls are pruned, so an
//    empty object is `.null` (Firebase: writing `{}` deletes).
// 2. Numbers are finite.
// 3. An integer is `.number` when a Double holds it exactly (every integer up to ±2^53 and many
//    beyond) and `.wideInteger` only when it does not (Firebase keeps 64-bit integers exact), so
//    each number has one form and `==` compares numbers by value. Make integers with
//    `Value.integer(_:)`.
// Arrays do not exist here: JSON arrays become objects with keys "0", "1", ... and are rendered
// back as arrays on read (`JSONWriter`).

public enum Value: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    /// A 64-bit integer a Double cannot hold exactly (beyond ±2^53); see invariant 3.
    case wideInteger(Int64)
    case string(String)
    case object([String: Value])

    /// The integer `n` in its one form: `.number` when a Double holds it exactly, else
    /// `.wideInteger`.
    public static func integer(_ n: Int64) -> Value {
        let double = Double(n)
        if let back = Int64(exactly: double), back == n { return .number(double) }
        return .wideInteger(n)
    }

    /// The number as a Double (a wide integer rounded to the nearest); nil when not a number.
    public var doubleValue: Double? {
        switch self {
        case .number(let n): return n
        case .wideInteger(let n): return Double(n)
        default: return nil
        }
    }

    /// True for `.number` and `.wideInteger`.
    public var isNumber: Bool { self.doubleValue != nil }

    /// `self + other` as Firebase's server values increment: two whole numbers in Int64's range
    /// add exactly (as Firebase adds two longs), falling back to Doubles on overflow; any other
    /// pair of numbers adds as Doubles. Nil when either is not a number.
    public func adding(_ other: Value) -> Value? {
        if let a = self.exactInt64, let b = other.exactInt64 {
            let (sum, overflow) = a.addingReportingOverflow(b)
            if !overflow { return .integer(sum) }
        }
        guard let a = self.doubleValue, let b = other.doubleValue else { return nil }
        return .number(a + b)
    }

    /// The number as an Int64 when it is a whole number in Int64's range; nil otherwise.
    public var exactInt64: Int64? {
        switch self {
        case .number(let n): return n == n.rounded(.towardZero) ? Int64(exactly: n) : nil
        case .wideInteger(let n): return n
        default: return nil
        }
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    public var isPrimitive: Bool {
        switch self {
        case .bool, .number, .wideInteger, .string: return true
        case .null, .object: return false
        }
    }

    /// The child at `key`, `.null` when absent or when this is not an object.
    public subscript(key: String) -> Value {
        if case .object(let children) = self { return children[key] ?? .null }
        return .null
    }

    /// The descendant at `path` relative to this value.
    public func child(at path: Path) -> Value {
        var node = self
        for key in path.keys {
            node = node[key]
            if node.isNull { return .null }
        }
        return node
    }

    /// This value with the subtree at `path` replaced by `newValue`, normalized (a null leaves
    /// no empty parents behind).
    public func setting(_ newValue: Value, at path: Path) -> Value {
        var copy = self
        copy.set(newValue, at: path)
        return copy
    }

    /// Sets `newValue` at `path` in place (`.null` deletes and prunes emptied parents; writing
    /// below a primitive replaces it). Costs O(depth) when the value's storage is not shared:
    /// each level's dictionary is taken out before it is changed, so it is never copied.
    public mutating func set(_ newValue: Value, at path: Path) {
        self.set(newValue, keys: path.keys[...])
    }

    private mutating func set(_ newValue: Value, keys: ArraySlice<String>) {
        guard let first = keys.first else {
            self = newValue
            return
        }
        var children: [String: Value]
        if case .object(let existing) = self {
            children = existing
            self = .null  // drop this reference so `children` is uniquely owned
        } else if newValue.isNull {
            return  // removing below a primitive (or nothing) changes nothing
        } else {
            children = [:]  // a primitive ancestor is replaced by the new object
        }
        var child = children.removeValue(forKey: first) ?? .null
        child.set(newValue, keys: keys.dropFirst())
        if !child.isNull { children[first] = child }
        self = children.isEmpty ? .null : .object(children)
    }

    /// Drops null children and empty objects at every depth. Iterative over an explicit stack
    /// would be needed for unbounded input; values are bounded by `Limits.jsonDepthMax`.
    /// Returns the value itself (no copy) when there is nothing to drop.
    public func normalized() -> Value {
        guard case .object(let children) = self, self.holdsNullOrEmptyObject else { return self }
        var kept: [String: Value] = [:]
        kept.reserveCapacity(children.count)
        for (key, child) in children {
            let normal = child.normalized()
            if !normal.isNull { kept[key] = normal }
        }
        return kept.isEmpty ? .null : .object(kept)
    }

    /// True when an object at any depth is empty or has a null child (what `normalized` drops).
    var holdsNullOrEmptyObject: Bool {
        guard case .object(let children) = self else { return false }
        if children.isEmpty { return true }
        for child in children.values {
            switch child {
            case .null: return true
            case .object: if child.holdsNullOrEmptyObject { return true }
            default: continue
            }
        }
        return false
    }

    /// Rough size in bytes (string bytes plus a fixed cost per node); what bounds a commit
    /// group's memory. Walks with an explicit stack.
    public var approximateBytes: Int {
        var total = 0
        var stack = [self]
        while let node = stack.popLast() {
            switch node {
            case .null, .bool, .number, .wideInteger: total += 16
            case .string(let s): total += 16 + s.utf8.count
            case .object(let children):
                total += 16
                for (key, child) in children {
                    total += key.utf8.count
                    stack.append(child)
                }
            }
        }
        return total
    }

    /// Number of leaves (primitives) in this value.
    public var leafCount: Int {
        switch self {
        case .null: return 0
        case .bool, .number, .wideInteger, .string: return 1
        case .object(let children): return children.values.reduce(0) { $0 + $1.leafCount }
        }
    }
}
