// Checks a value before it may be written at a path, and normalizes it.
//
// Refuses (naming the offending key, path and rule): invalid keys (each at most
// `Limits.keyBytesMax`), leaf paths deeper than `Limits.pathDepthMax`, strings over
// `Limits.stringBytesMax`, non-finite numbers, malformed server values, and priorities that are
// not a finite number, a string, null or `{".sv": "timestamp"}`. Walks with an explicit stack.
// Validation runs on the writer's task for every write, so the walk allocates little.
//
// Priorities are kept in Firebase's export form (`Value+Priority.swift`): `{".value": v}` is
// `v`, `{".value": v, ".priority": p}` stays so when `v` is a primitive (an object `v` gets
// the `.priority` member itself), a null `.priority` is dropped, and a node that is empty but
// for its priority is null (Firebase keeps no priority on an empty node). A write at
// `<path>/.priority` holds one node's priority: only the priority rules apply to it.

public enum WriteValidator {
    public static let serverValueKey = ".sv"

    /// Returns `value` normalized (nulls and empty objects pruned) after checking every rule
    /// for a write at `base`.
    public static func validate(_ value: Value, at base: Path) throws(EddyError) -> Value {
        var bytes = 0
        return try validate(value, at: base, approximateBytes: &bytes)
    }

    /// As `validate(_:at:)`, also adding the value's `Value.approximateBytes` to
    /// `approximateBytes` in the same walk. Builds no `Path` unless it has to name one in an
    /// error: nodes record their key and parent, and a path is rebuilt from them on failure.
    public static func validate(_ value: Value, at base: Path, approximateBytes: inout Int) throws(EddyError) -> Value {
        try validateLocation(base)
        if base.lastKey == priorityKey, let node = base.parent {  // a `<path>/.priority` write
            try validatePriority(value, at: node)
            approximateBytes += value.approximateBytes
            return value
        }
        // nodes[i]: a key below `base`, its parent node (-1: base) and depth.
        var nodes: [(key: String, parent: Int, depth: Int)] = []
        var stack: [(value: Value, node: Int)] = [(value, -1)]
        var needsNormalization = false
        var needsUnwrapping = false
        var size = 0
        func path(_ node: Int) -> Path {
            var keys: [String] = []
            var i = node
            while i >= 0 {
                keys.append(nodes[i].key)
                i = nodes[i].parent
            }
            return base.appending(Path(validatedKeys: keys.reversed()))
        }
        while let (node, index) = stack.popLast() {
            switch node {
            case .null:
                needsNormalization = true
            case .bool:
                size += 16
            case .wideInteger:
                size += 16
            case .number(let n):
                guard n.isFinite else {
                    throw EddyError(.invalidValue, "number at \(path(index).abbreviated) is not finite; only finite numbers can be stored")
                }
                size += 16
            case .string(let s):
                let bytes = s.utf8.count
                if bytes > Limits.stringBytesMax {
                    throw EddyError(
                        .limitExceeded,
                        "string at \(path(index).abbreviated) is \(bytes) bytes; stringBytesMax is \(Limits.stringBytesMax)")
                }
                size += 16 + bytes
            case .object(let children):
                size += 16
                if children.isEmpty { needsNormalization = true }
                if children[serverValueKey] != nil {
                    try validateServerValue(children, at: path(index))
                    continue
                }
                if let priority = children[priorityKey] {
                    try validatePriority(priority, at: path(index))
                    size += 16
                    needsUnwrapping = true
                }
                if let wrapped = children[wrappedValueKey] {
                    guard children.count == (children[priorityKey] == nil ? 1 : 2) else {
                        throw EddyError(
                            .invalidValue,
                            "\(path(index).abbreviated) has \".value\" and other keys; \".value\" may only stand beside \".priority\"")
                    }
                    needsUnwrapping = true
                    stack.append((wrapped, index))  // the same location
                    continue
                }
                let depth = index < 0 ? base.depth : nodes[index].depth
                for (key, child) in children where key != priorityKey {
                    do {
                        try Key.validate(key)
                    } catch {
                        try Key.validate(key, inPath: path(index).description)  // the same error, with its path
                        throw error
                    }
                    nodes.append((key, index, depth + 1))
                    let childIndex = nodes.count - 1
                    if depth + 1 > Limits.pathDepthMax {
                        try path(childIndex).validateSize()
                    }
                    size += key.utf8.count
                    stack.append((child, childIndex))
                }
            }
        }
        approximateBytes += size
        if needsUnwrapping { return exportNormalized(value) }
        return needsNormalization ? value.normalized() : value
    }

    /// Checks a `.priority` member (or the value of a `<path>/.priority` write): a finite
    /// number, a string, null or a server value (the timestamp, or an increment of the old
    /// priority, as Firebase's SDKs allow).
    public static func validatePriority(_ priority: Value, at path: Path) throws(EddyError) {
        switch priority {
        case .null: return
        case .string(let s):
            guard s.utf8.count <= Limits.stringBytesMax else {
                throw EddyError(.limitExceeded, "priority of \(path.abbreviated) is over stringBytesMax (\(Limits.stringBytesMax)) bytes")
            }
        case .wideInteger:
            return
        case .number(let n):
            guard n.isFinite else {
                throw EddyError(.invalidValue, "priority of \(path.abbreviated) is not finite; a priority is a finite number, a string or null")
            }
        case .bool, .object:
            if case .object(let children) = priority, children[serverValueKey] != nil {
                try validateServerValue(children, at: path.appending(priorityKey))
                return
            }
            let got = JSONWriter.string(priority)
            throw EddyError(
                .invalidValue,
                "priority of \(path.abbreviated) must be a number, a string, null or a server value ({\".sv\": ...}), not \(got.count > 80 ? String(got.prefix(80)) + "…" : got)")
        }
    }

    /// `value` normalized in export form (see the header): wrappers unwrapped where they carry
    /// no priority, null priorities dropped, nulls and empty objects pruned, and a node empty
    /// but for its priority made null. Server values are left as they are. Recursion depth is
    /// bounded by the JSON nesting bound every value was parsed under.
    private static func exportNormalized(_ value: Value) -> Value {
        guard case .object(let children) = value, children[serverValueKey] == nil else { return value }
        let priority = children[priorityKey] ?? .null
        if let wrapped = children[wrappedValueKey] {
            return exportNormalized(wrapped).withOwnPriority(.null).withOwnPriority(priority)
        }
        var kept: [String: Value] = [:]
        kept.reserveCapacity(children.count)
        for (key, child) in children where key != priorityKey {
            let normal = exportNormalized(child)
            if !normal.isNull { kept[key] = normal }
        }
        return kept.isEmpty ? .null : Value.object(kept).withOwnPriority(priority)
    }

    static let wrappedValueKey = Value.wrappedValueKey
    static let priorityKey = Value.priorityKey

    /// `value` as Firebase's SDKs read it without priorities: every `{".value": v}` replaced by
    /// `v` and every `.priority` key dropped (the Swift client's view; it keeps no priorities).
    /// `value` itself when it holds neither (the check builds no new value).
    public static func unwrappingFirebaseForms(_ value: Value) -> Value {
        var stack = [value]
        while let node = stack.popLast() {
            guard case .object(let children) = node, children[serverValueKey] == nil else { continue }
            if children[wrappedValueKey] != nil || children[priorityKey] != nil { return unwrapped(value) }
            stack.append(contentsOf: children.values)
        }
        return value
    }

    /// `value` with every `{".value": v}` replaced by `v` and every `.priority` key dropped;
    /// server values are left as they are.
    private static func unwrapped(_ value: Value) -> Value {
        guard case .object(let children) = value, children[serverValueKey] == nil else { return value }
        if let wrapped = children[wrappedValueKey] { return unwrapped(wrapped) }
        var kept: [String: Value] = [:]
        kept.reserveCapacity(children.count)
        for (key, child) in children where key != priorityKey { kept[key] = unwrapped(child) }
        return .object(kept)
    }

    /// Checks a write location against the path limits. (`/.info` never reaches here: its
    /// leading key is refused by key validation and the REST layer answers it read-only.)
    public static func validateLocation(_ path: Path) throws(EddyError) {
        // Paths built with `Path(validatedKeys:)` reach here too; a bad key must never be stored.
        for (i, key) in path.keys.enumerated() {
            if key == priorityKey, i == path.depth - 1, i > 0 { continue }  // a `<path>/.priority` write
            do {
                try Key.validate(key)
            } catch {
                try Key.validate(key, inPath: path.description)
                throw error
            }
        }
        try path.validateSize()
    }

    private static func validateServerValue(_ children: [String: Value], at path: Path) throws(EddyError) {
        guard children.count == 1 else {
            throw EddyError(.invalidValue, "server value at \(path.abbreviated) must be the only key of its object: {\".sv\": ...}")
        }
        switch children[serverValueKey]! {
        case .string("timestamp"): return
        case .object(let op):
            if op.count == 1, let n = op["increment"]?.doubleValue, n.isFinite { return }
            throw EddyError(.invalidValue, "server value at \(path.abbreviated) must be {\".sv\": {\"increment\": <number>}}")
        default:
            throw EddyError(
                .invalidValue,
                "unknown server value at \(path.abbreviated); supported: {\".sv\": \"timestamp\"} and {\".sv\": {\"increment\": n}}")
        }
    }

    /// The server-value operation in `value`, if it is one (after validation).
    public static func serverValue(_ value: Value) -> ServerValue? {
        guard case .object(let children) = value, children.count == 1, let op = children[serverValueKey] else { return nil }
        switch op {
        case .string("timestamp"): return .timestamp
        case .object(let o):
            if let delta = o["increment"], delta.isNumber { return .increment(delta) }
            return nil
        default: return nil
        }
    }
}

/// A value the leader resolves at commit time; the log stores the resolved result.
public enum ServerValue: Sendable, Equatable {
    case timestamp
    /// Adds a number (`.number` or `.wideInteger`) to the old one (`Value.adding`).
    case increment(Value)
}
