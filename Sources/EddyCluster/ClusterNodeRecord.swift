// What a node of a cluster publishes about itself in etcd (`/eddy/<cluster>/nodes/<node>`), and
// what the leader key holds: its id, how far it has applied the log, where it serves clients
// and followers. JSON, so an operator can read it with `etcdctl get`.

import EddyModel

public struct ClusterNodeRecord: Sendable, Equatable {
    public var node: String
    /// The newest log entry this node applied (its own newest entry on a leader); nil: none.
    public var applied: LogID?
    /// The leadership term of that entry (`LogEntry.term`; 0 before any cluster term).
    public var term: UInt64
    /// The URL of its HTTP API (what a follower redirects writes to), when it has one.
    public var http: String?
    /// Where its log server listens for followers (a Unix socket path or host:port).
    public var replication: String?

    public init(node: String, applied: LogID?, term: UInt64 = 0, http: String? = nil, replication: String? = nil) {
        self.node = node
        self.applied = applied
        self.term = term
        self.http = http
        self.replication = replication
    }

    public var bytes: [UInt8] {
        var object: [String: Value] = [
            "node": .string(self.node), "applied": self.applied.map { .string($0.rawValue) } ?? .null, "term": .number(Double(self.term)),
        ]
        if let http = self.http { object["http"] = .string(http) }
        if let replication = self.replication { object["replication"] = .string(replication) }
        return JSONWriter.bytes(.object(object))
    }

    public init(bytes: [UInt8]) throws(EddyError) {
        guard case .object(let object) = try JSONParser.parse(bytes), case .string(let node)? = object["node"] else {
            throw EddyError(.invalidArgument, "a cluster node record must be a JSON object with a \"node\" string")
        }
        self.node = node
        self.term = 0
        if case .number(let term)? = object["term"] {
            guard let exact = UInt64(exactly: term) else { throw EddyError(.invalidArgument, "node \(node): term \(term) is not a whole number") }
            self.term = exact
        }
        if case .string(let applied)? = object["applied"] {
            guard let id = LogID(applied) else { throw EddyError(.invalidArgument, "node \(node): applied \(applied.debugDescription) is not a log id") }
            self.applied = id
        }
        if case .string(let http)? = object["http"] { self.http = http }
        if case .string(let replication)? = object["replication"] { self.replication = replication }
    }

    /// The election's order: the newer term of the newest entry wins, then more applied, then
    /// the higher node id.
    public static func isBehind(_ a: ClusterNodeRecord, _ b: ClusterNodeRecord) -> Bool {
        // The term of the newest entry first (as Raft ranks logs): ids are times, and a clock
        // running ahead on a deposed leader must not make its stale history look newer.
        if a.term != b.term { return a.term < b.term }
        switch (a.applied, b.applied) {
        case (nil, .some): return true
        case (.some, nil): return false
        case (let x?, let y?) where x != y: return x < y
        default: return a.node < b.node
        }
    }
}
