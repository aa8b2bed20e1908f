// Security-and-index rules as Firebase stores them (`{"rules": {...}}`), and the `.indexOn`
// declarations they contain.
//
// Accepted shape: a top-level object with exactly one member, "rules", an object. Inside it a
// key is a child key (Firebase key rules), a `$wildcard`, or one of `.read`, `.write`,
// `.validate` (compiled by `SecurityRules` and enforced by the engine) and `.indexOn` (a string or an
// array of strings, each ".value" or a child path such as "metrics/views"). Anything else is
// refused with the offending rules path. Walks with an explicit stack.

public struct Rules: Sendable, Equatable {
    /// One `.indexOn` entry at a location pattern.
    public struct IndexDeclaration: Sendable, Hashable, CustomStringConvertible {
        public enum Segment: Sendable, Hashable {
            case key(String)
            /// `$name`: any key.
            case wildcard(String)
        }

        public enum On: Sendable, Hashable {
            case value
            case child(Path)
        }

        /// The location whose children are indexed, from the root.
        public var location: [Segment]
        public var on: On

        /// True when `path` is a location this declaration indexes.
        public func matches(_ path: Path) -> Bool {
            guard path.depth == self.location.count else { return false }
            for (segment, key) in zip(self.location, path.keys) {
                if case .key(let literal) = segment, literal != key { return false }
            }
            return true
        }

        public var description: String {
            let location = self.location.map { segment -> String in
                switch segment {
                case .key(let k): return k
                case .wildcard(let w): return "$" + w
                }
            }.joined(separator: "/")
            switch self.on {
            case .value: return "/\(location) .indexOn .value"
            case .child(let path): return "/\(location) .indexOn \(path.keys.joined(separator: "/"))"
            }
        }
    }

    /// Open rules: everything readable and writable, no indexes. What a new database has in the
    /// loopback emulator mode (as the Firebase emulator without a rules file) and in the engine
    /// when nothing else is configured.
    public static let `default` = Rules(json: .object(["rules": .object([".read": .bool(true), ".write": .bool(true)])]), indexes: [])
    /// Locked rules: nothing readable or writable but by the admin. What a new database has
    /// once authentication is configured (as a new Firebase database in locked mode).
    public static let locked = Rules(json: .object(["rules": .object([".read": .bool(false), ".write": .bool(false)])]), indexes: [])

    /// The rules document exactly as stored and returned.
    public var json: Value
    /// Every `.indexOn` entry, in document order of locations.
    public var indexes: [IndexDeclaration]

    private init(json: Value, indexes: [IndexDeclaration]) {
        self.json = json
        self.indexes = indexes
    }

    public static func parse(_ document: Value) throws(EddyError) -> Rules {
        guard case .object(let top) = document, top.count == 1, case .object(let root)? = top["rules"] else {
            throw EddyError(.invalidValue, "rules must be a JSON object with one member \"rules\" holding an object, e.g. {\"rules\": {}}")
        }
        var indexes: [IndexDeclaration] = []
        var stack: [([String: Value], [IndexDeclaration.Segment])] = [(root, [])]
        while let (node, location) = stack.popLast() {
            let here = "/" + location.map { s -> String in
                if case .key(let k) = s { return k }
                if case .wildcard(let w) = s { return "$" + w }
                return ""
            }.joined(separator: "/")
            for key in node.keys.sorted(by: Key.lessThan) {
                let child = node[key]!
                switch key {
                case ".read", ".write", ".validate":
                    switch child {
                    case .bool, .string: continue
                    default:
                        throw EddyError(.invalidValue, "rules at \(here): \(key) must be a boolean or an expression string")
                    }
                case ".indexOn":
                    indexes.append(contentsOf: try Self.indexOn(child, at: location, here: here))
                default:
                    if key.hasPrefix(".") {
                        throw EddyError(
                            .invalidValue, "rules at \(here): unknown rule \(key); known: .read, .write, .validate, .indexOn")
                    }
                    guard case .object(let children) = child else {
                        throw EddyError(.invalidValue, "rules at \(here): \(key) must hold an object of rules")
                    }
                    if key.hasPrefix("$") {
                        let name = String(key.dropFirst())
                        do {
                            try Key.validate(name)
                        } catch {
                            throw EddyError(.invalidKey, "rules at \(here): wildcard \(key) is invalid: \(error.message)")
                        }
                        stack.append((children, location + [.wildcard(name)]))
                    } else {
                        do {
                            try Key.validate(key)
                        } catch {
                            throw EddyError(.invalidKey, "rules at \(here): \(error.message)")
                        }
                        guard location.count < Limits.pathDepthMax else {
                            throw EddyError(.invalidPath, "rules at \(here) nest deeper than pathDepthMax (\(Limits.pathDepthMax))")
                        }
                        stack.append((children, location + [.key(key)]))
                    }
                }
            }
        }
        return Rules(json: document, indexes: indexes)
    }

    /// Refuses a document with two `$wildcard`s at one level, naming them: which one would
    /// capture a key is arbitrary. Checked when a document is set (`Engine.setRules`), not in
    /// `parse`, so a document stored by an older version still loads (its first wildcard in
    /// key order applies; see `SecurityRules.compile`).
    public static func checkOneWildcardPerLevel(_ document: Value) throws(EddyError) {
        guard case .object(let top) = document, case .object(let root)? = top["rules"] else { return }
        var stack: [([String: Value], String)] = [(root, "")]
        while let (node, here) = stack.popLast() {
            let wildcards = node.keys.filter { $0.hasPrefix("$") }.sorted(by: Key.lessThan)
            if wildcards.count > 1 {
                throw EddyError(
                    .invalidValue,
                    "rules at \(here.isEmpty ? "/" : here): wildcards \(wildcards.joined(separator: " and ")) at one level; a level takes at most one $wildcard")
            }
            for (key, child) in node where !key.hasPrefix(".") {
                if case .object(let children) = child { stack.append((children, here + "/" + key)) }
            }
        }
    }

    private static func indexOn(
        _ value: Value, at location: [IndexDeclaration.Segment], here: String
    ) throws(EddyError) -> [IndexDeclaration] {
        var names: [String] = []
        switch value {
        case .string(let name): names = [name]
        case .object:
            // JSON arrays arrive as objects keyed "0", "1", ...
            guard let elements = JSONWriter.arrayElements(value.objectChildren), !elements.isEmpty else { fallthrough }
            for element in elements {
                guard case .string(let name) = element else {
                    throw EddyError(.invalidValue, "rules at \(here): .indexOn must be a string or an array of strings")
                }
                names.append(name)
            }
        default:
            throw EddyError(.invalidValue, "rules at \(here): .indexOn must be a string or an array of strings")
        }
        var declarations: [IndexDeclaration] = []
        for name in names {
            if name == ".value" {
                declarations.append(IndexDeclaration(location: location, on: .value))
                continue
            }
            let path: Path
            do {
                path = try Path(name)
            } catch {
                throw EddyError(.invalidValue, "rules at \(here): .indexOn \"\(name)\" is not \".value\" or a child path: \(error.message)")
            }
            guard !path.isRoot else { throw EddyError(.invalidValue, "rules at \(here): .indexOn \"\(name)\" names no child") }
            declarations.append(IndexDeclaration(location: location, on: .child(path)))
        }
        return declarations
    }
}

extension Value {
    /// The members of an object (empty for anything else).
    var objectChildren: [String: Value] {
        if case .object(let children) = self { return children }
        return [:]
    }
}
