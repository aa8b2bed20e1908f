// The values rule expressions compute with: JSON primitives, maps (`auth`, `auth.token`,
// `query`), lists (`hasChildren([...])` arguments) and snapshots (`root`, `data`, `newData`
// and what `child()`/`parent()` return: a location in one version of the tree).

public enum RuleValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case map([String: RuleValue])
    case list([RuleValue])
    case snapshot(RuleSnapshot)

    /// A JSON value as a rule value (objects become maps).
    public init(_ value: Value) {
        switch value {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .number(let n): self = .number(n)
        case .wideInteger(let n): self = .number(Double(n))  // rules compute with doubles, as Firebase's
        case .string(let s): self = .string(s)
        case .object(let children): self = .map(children.mapValues { RuleValue($0) })
        }
    }

    var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .map: return "map"
        case .list: return "list"
        case .snapshot: return "snapshot"
        }
    }
}

/// A location in one version of the tree (`root` and `data` in the current one, `newData` in the
/// one a write would make). Two snapshots are equal when they are the same location of the
/// same version (rules cannot compare snapshots; this serves tests).
public struct RuleSnapshot: Sendable, Equatable {
    public var tree: RuleTree
    public var path: Path

    public init(tree: RuleTree, path: Path) {
        self.tree = tree
        self.path = path
    }

    public func value() throws(RuleEvaluationError) -> Value { try self.tree.value(at: self.path) }

    public static func == (a: RuleSnapshot, b: RuleSnapshot) -> Bool { a.tree === b.tree && a.path == b.path }
}
