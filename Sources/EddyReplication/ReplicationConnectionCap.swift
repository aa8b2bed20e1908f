// At most `max` open connections to the leader's log servers (`--replication-connections-max`),
// the Unix socket and the TCP listener together. Each connection may hold one frame of up to
// `LogServerConnection.frameBytesMax` waiting for its follower to read it, besides what the
// kernel buffers, so the cap bounds what followers that stop reading can pin: without it, 2,000
// connections that said `hello` and read nothing held 6 GB once writes flowed. A connection past
// the cap is answered `refused` (reason `busy`, naming the option) and closed; a follower retries
// with its usual backoff. A real follower uses one connection per namespace it replicates
// (at most `FollowerSupervisor`'s session limit) and one more while it checks its replica at
// its start.
//
// Invariant: `open` counts the connections admitted and not yet closed; it never exceeds `max`.
// `refused` counts those turned away, for `/metrics`.

import Synchronization

public final class ReplicationConnectionCap: Sendable {
    /// The default of `--replication-connections-max`: five followers each replicating 48
    /// namespaces at once, with room to spare.
    public static let maxDefault = 256

    public let max: Int
    private let counts = Mutex((open: 0, refused: 0))

    public init(max: Int = ReplicationConnectionCap.maxDefault) {
        self.max = max
    }

    /// Admits one more connection unless `max` are open.
    func admit() -> Bool {
        self.counts.withLock { counts in
            guard counts.open < self.max else {
                counts.refused += 1
                return false
            }
            counts.open += 1
            return true
        }
    }

    /// An admitted connection closed.
    func release() {
        self.counts.withLock { $0.open -= 1 }
    }

    /// Connections admitted and open now.
    public var openCount: Int { self.counts.withLock { $0.open } }
    /// Connections refused at the cap since the start (`/metrics`).
    public var refusedCount: Int { self.counts.withLock { $0.refused } }
}
