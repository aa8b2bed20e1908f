// Target EddyLog: the operation log's entries and their codec (each entry's bytes are what
// followers receive) and change-data-capture records. Pure values: the engine's Log/ folder owns
// the log family (appends, the one scan, retention, the read-only log). Invariant: decoding an
// encoded entry gives it back exactly; the encoding only ever gains versions.
//
// One operation-log entry: an accepted write, resolved (server values replaced by their
// results) so every replica applies exactly the same thing, plus the before-image of every
// location it changed. Its key in the `log` column family is `id`.

import EddyModel

public struct LogEntry: Sendable, Equatable {
    public enum Kind: UInt8, Sendable {
        case set = 1
        case update = 2
        case push = 3
        case remove = 4

        public var name: String {
            switch self {
            case .set: return "set"
            case .update: return "update"
            case .push: return "push"
            case .remove: return "remove"
            }
        }
    }

    public struct Change: Sendable, Equatable {
        /// Relative to the entry's `location`; empty for the location itself.
        public var path: Path
        /// The resolved, normalized value written there; `.null` removes.
        public var value: Value

        public init(path: Path, value: Value) {
            self.path = path
            self.value = value
        }
    }

    public struct BeforeImage: Sendable, Equatable {
        /// Absolute path of a location the write replaced.
        public var path: Path
        /// What was there before (`.null` when nothing).
        public var value: Value

        public init(path: Path, value: Value) {
            self.path = path
            self.value = value
        }
    }

    public var id: LogID
    public var kind: Kind
    /// Server time (ms since the Unix epoch) when the write was committed; what
    /// `{".sv": "timestamp"}` resolved to.
    public var timestampMilliseconds: UInt64
    public var location: Path
    /// The cluster leadership term the entry was written in (the leader key's etcd revision);
    /// 0 outside a cluster. Never decreases along a log: a replica refuses an older one.
    public var term: UInt64
    /// Invariant: no change path is an ancestor of another.
    public var changes: [Change]
    /// One image per change, plus one for a primitive ancestor a change replaced.
    public var before: [BeforeImage]

    public init(
        id: LogID, kind: Kind, timestampMilliseconds: UInt64, location: Path, changes: [Change], before: [BeforeImage],
        term: UInt64 = 0
    ) {
        self.term = term
        self.id = id
        self.kind = kind
        self.timestampMilliseconds = timestampMilliseconds
        self.location = location
        self.changes = changes
        self.before = before
    }

    /// The entry as one JSON object (what `eddy log` prints, one per line).
    public var json: Value {
        var changes: [String: Value] = [:]
        for change in self.changes { changes[self.location.appending(change.path).description] = change.value }
        var before: [String: Value] = [:]
        for image in self.before { before[image.path.description] = image.value }
        return .object([
            "id": .string(self.id.rawValue),
            "kind": .string(self.kind.name),
            "timestamp": .number(Double(self.timestampMilliseconds)),
            "term": .number(Double(self.term)),
            "path": .string(self.location.description),
            "changes": .object(changes),
            "before": .object(before),
        ])
    }
}
