// Checks a value before it may be written at a path, and normalizes it.
//
// Refuses (naming the offending key, path and rule): invalid keys, leaf paths deeper than
// `Limits.pathDepthMax` or longer than `Limits.pathBytesMax`, strings over
// `Limits.stringBytesMax`, non-finite numbers, malformed server values, and the legacy dotted
// keys Eddy does not support yet (`.priority`, `.value`). Walks with an explicit stack.

public enum WriteValidator {
    public static let serverValueKey = ".sv"

    /// Returns `value` normalized (nulls and empty objects pruned) after checking every rule
    /// for a write at `base`.
    public static func validate(_ value: Value, at base: Path) throws(EddyError) -> Value {
        try validateLocation(base)
        // (value, path of that value) pairs still to check.
        var stack: [(Value, Path)] = [(value, base)]
        while let (node, path) = stack.popLast() {
            switch node {
            case .null: continue
            case .bool: try checkLeafPath(path)
            case .number(let n):
                guard n.isFinite else {
                    throw EddyError(.invalidValue, "number at \(path.abbreviated) is not finite; only finite numbers can be stored")
                }
                try checkLeafPath(path)
            case .string(let s):
                let bytes = s.utf8.count
                if bytes > Limits.stringBytesMax {
                    throw EddyError(
                        .limitExceeded,
                        "string at \(path.abbreviated) is \(bytes) bytes; stringBytesMax is \(Limits.stringBytesMax)")
                }
                try checkLeafPath(path)
            case .object(let children):
                if children[serverValueKey] != nil {
                    try validateServerValue(children, at: path)
                    try checkLeafPath(path)
                    continue
                }
                for (key, child) in children {
                    if key == ".priority" || key == ".value" {
                        throw EddyError(
                            .unsupported,
                            "key \"\(key)\" at \(path.abbreviated): priorities are not supported yet; write plain values")
                    }
                    try Key.validate(key, inPath: path.description)
                    stack.append((child, path.appending(key)))
                }
            }
        }
        return value.normalized()
    }

    /// Checks a write location against the path limits. (`/.info` never reaches here: its
    /// leading key is refused by key validation and the REST layer answers it read-only.)
    public static func validateLocation(_ path: Path) throws(EddyError) {
        // Paths built with `Path(validatedKeys:)` reach here too; a bad key must never be stored.
        for key in path.keys { try Key.validate(key, inPath: path.description) }
        try path.validateSize()
    }

    private static func checkLeafPath(_ path: Path) throws(EddyError) {
        try path.validateSize()
    }

    private static func validateServerValue(_ children: [String: Value], at path: Path) throws(EddyError) {
        guard children.count == 1 else {
            throw EddyError(.invalidValue, "server value at \(path.abbreviated) must be the only key of its object: {\".sv\": ...}")
        }
        switch children[serverValueKey]! {
        case .string("timestamp"): return
        case .object(let op):
            if op.count == 1, case .number(let n)? = op["increment"], n.isFinite { return }
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
            if case .number(let n)? = o["increment"] { return .increment(n) }
            return nil
        default: return nil
        }
    }
}

/// A value the leader resolves at commit time; the log stores the resolved result.
public enum ServerValue: Sendable, Equatable {
    case timestamp
    case increment(Double)
}
