// A change of a listened location's value, in the shape of Firebase's REST streaming events:
// `put` replaces the value at a path (relative to the listened location; `.null` removes it),
// `patch` merges named children of a path (a `.null` child removes that child). What a
// listener that keeps a copy of its location does with them is `apply(to:)`: applying every
// change of a listener, in order, to the value it was first sent gives the current value.
//
// Invariant of the changes the engine produces: a patch has at least one child, and no two
// changes of one log entry touch the same path (an entry's changes are disjoint, so their
// order within the entry does not matter to the result).

public enum ValueChange: Sendable, Hashable {
    case put(path: Path, value: Value)
    case patch(path: Path, children: [String: Value])

    /// The path the change is at, relative to the listened location.
    public var path: Path {
        switch self {
        case .put(let path, _), .patch(let path, _): return path
        }
    }

    /// Applies the change to `value` (the listened location's value): a put replaces the
    /// subtree at its path (writing below a primitive replaces the primitive, and a null prunes
    /// emptied parents, as the database does); a patch puts each child.
    public func apply(to value: inout Value) {
        switch self {
        case .put(let path, let new):
            value.set(new, at: path)
        case .patch(let path, let children):
            for key in children.keys.sorted(by: { Key.compare($0, $1) < 0 }) {
                value.set(children[key]!, at: path.appending(key))
            }
        }
    }

    /// `apply(to:)` for a copy in export form (`Value+Priority.swift`) and changes in export
    /// form: a `<node>/.priority` path sets the node's priority, writing below a primitive
    /// keeps its priority, and a node left with only its priority is null.
    public func applyExport(to value: inout Value) {
        switch self {
        case .put(let path, let new):
            value.setExport(new, at: path)
        case .patch(let path, let children):
            // As eddyd applies an update: values, then removals (a node left with children never
            // goes empty on the way, which would drop its priority), then the priority (only a
            // node that exists has one).
            let keys = children.keys.sorted(by: { Key.compare($0, $1) < 0 })
            for key in keys where key != Value.priorityKey && !children[key]!.isNull {
                value.setExport(children[key]!, at: path.appending(key))
            }
            for key in keys where key != Value.priorityKey && children[key]!.isNull { value.setExport(.null, at: path.appending(key)) }
            if let priority = children[Value.priorityKey] { value.setExport(priority, at: path.appending(Value.priorityKey)) }
        }
    }

    /// Bytes the change holds, roughly (for buffer budgets).
    public var approximateBytes: Int {
        switch self {
        case .put(let path, let value):
            return 16 + path.keys.reduce(0) { $0 + $1.utf8.count + 1 } + value.approximateBytes
        case .patch(let path, let children):
            return 16 + path.keys.reduce(0) { $0 + $1.utf8.count + 1 }
                + children.reduce(0) { $0 + $1.key.utf8.count + 4 + $1.value.approximateBytes }
        }
    }

    /// The change's data as JSON: a put's value, or a patch's children as an object whose
    /// members come in Firebase key order (a removed child is `null`).
    public func writeData(into out: inout [UInt8]) {
        switch self {
        case .put(_, let value):
            JSONWriter.write(value, into: &out, pretty: false, indent: 0)
        case .patch(_, let children):
            out.append(UInt8(ascii: "{"))
            for (i, key) in children.keys.sorted(by: { Key.compare($0, $1) < 0 }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONWriter.writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                JSONWriter.write(children[key]!, into: &out, pretty: false, indent: 0)
            }
            out.append(UInt8(ascii: "}"))
        }
    }
}
