// A location in the tree: a list of validated keys. `Path.root` has none.
//
// Invariants: every key satisfies `Key.validate` (so at most `Limits.keyBytesMax` bytes);
// `keys.count <= Limits.pathDepthMax`. A whole path has no byte limit of its own.

public struct Path: Sendable, Hashable, CustomStringConvertible {
    public private(set) var keys: [String]

    public static let root = Path(validatedKeys: [])

    /// Keys that were already validated (decoded from disk or built from valid parts).
    public init(validatedKeys keys: [String]) {
        self.keys = keys
    }

    /// Parses a `/`-separated path. Empty segments (leading, trailing, doubled slashes) are
    /// ignored, as Firebase clients do. Throws `invalidKey`/`invalidPath` naming the segment.
    public init(_ string: String) throws(EddyError) {
        var keys: [String] = []
        // A byte scan for "/" (the generic `split` was a visible cost when decoding log entries).
        let utf8 = string.utf8
        var start = utf8.startIndex
        var i = start
        while true {
            let atEnd = i == utf8.endIndex
            if atEnd || utf8[i] == UInt8(ascii: "/") {
                if start != i {
                    let key = String(string[start..<i])
                    try Key.validate(key, inPath: string)
                    keys.append(key)
                }
                if atEnd { break }
                start = utf8.index(after: i)
            }
            i = utf8.index(after: i)
        }
        let path = Path(validatedKeys: keys)
        try path.validateSize()
        self = path
    }

    /// As `init(_:)`, also accepting a last key `.priority` below the root: the path of a
    /// node's priority, as log entries hold writes of one (`<path>/.priority`).
    public init(allowingPriority string: String) throws(EddyError) {
        if string == Value.priorityKey {  // an update's change of its location's priority
            self.init(validatedKeys: [Value.priorityKey])
            return
        }
        let suffix = "/" + Value.priorityKey
        guard string.hasSuffix(suffix), string.utf8.count > suffix.utf8.count else {
            try self.init(string)
            return
        }
        let node = try Path(String(string.dropLast(suffix.utf8.count)))
        guard !node.isRoot else { try self.init(string); return }
        self = node.appending(Value.priorityKey)
    }

    public var isRoot: Bool { self.keys.isEmpty }
    public var depth: Int { self.keys.count }
    public var lastKey: String? { self.keys.last }

    public var parent: Path? {
        guard !self.keys.isEmpty else { return nil }
        return Path(validatedKeys: Array(self.keys.dropLast()))
    }

    public func appending(_ key: String) -> Path {
        Path(validatedKeys: self.keys + [key])
    }

    public func appending(_ other: Path) -> Path {
        Path(validatedKeys: self.keys + other.keys)
    }

    /// True when `self` is `other` or one of its ancestors.
    public func isAncestorOrSelf(of other: Path) -> Bool {
        var i = self.keys.count
        guard i <= other.keys.count else { return false }
        // From the deepest key up: siblings and cousins, the usual misses, differ there.
        while i > 0 {
            i -= 1
            if self.keys[i] != other.keys[i] { return false }
        }
        return true
    }

    /// Firebase's order of one change's events across locations: its sync tree raises them
    /// depth first, a location's children in key order and all before the location itself
    /// (`/t/a`, then `/t/d`, then `/t`). True when `self`'s events come before `other`'s.
    public func raisesEventsBefore(_ other: Path) -> Bool {
        for (mine, theirs) in zip(self.keys, other.keys) where mine != theirs {
            return Key.compare(mine, theirs) < 0
        }
        return self.keys.count > other.keys.count  // a descendant before its ancestor
    }

    /// UTF-8 bytes of the `/`-joined form without a leading slash.
    public var byteCount: Int {
        self.keys.reduce(0) { $0 + $1.utf8.count } + max(0, self.keys.count - 1)
    }

    public func validateSize() throws(EddyError) {
        if self.keys.count > Limits.pathDepthMax {
            throw EddyError(
                .invalidPath,
                "path \(self.abbreviated) is \(self.keys.count) keys deep; pathDepthMax is \(Limits.pathDepthMax)")
        }
    }

    public var description: String { "/" + self.keys.joined(separator: "/") }

    /// The path for messages, shortened when very long so errors stay readable.
    public var abbreviated: String {
        let full = self.description
        guard full.utf8.count > 120 else { return full }
        return String(full.prefix(100)) + "…"
    }
}
