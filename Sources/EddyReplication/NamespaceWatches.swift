// The leader's side of parked namespaces. A follower replicates at most
// `FollowerSupervisor.sessionsMax` namespaces over connections of their own at once; when it
// has more, it parks idle ones (closes their connections, which frees the namespace on both
// sides) and sends a `watch` frame on its default namespace's connection naming each parked
// namespace and the newest entry it applied there. This table remembers those watches per
// connection, and a watch fires once, when the namespace has an entry newer than the one named:
// at once when it has one already (`LogServerConnection` checks after registering), otherwise at
// the namespace's next durable commit (`DataDirectory.observeCommits`). The default namespace's
// connection then names the fired namespaces in a heartbeat's `written` list, and the follower
// connects to them again. Until it does, `positions` keeps naming what it applied, for log
// retention.
//
// Invariants: a watch is registered before its namespace's newest entry is read, so a commit is
// either seen by that read or fires the watch; a watch fires at most once (it is removed as it
// fires); the table holds at most one watch per connection and namespace, so it is bounded by
// the connections times the namespaces on disk. Thread-safe; `committed` runs on committer and
// syncer threads and costs one atomic load while nothing is watched.

import EddyModel
import Synchronization

final class NamespaceWatches: Sendable {
    private struct State {
        /// Watches by namespace: the connections watching it and the entry each named.
        var watching: [String: [UInt64: LogID?]] = [:]
        /// Per connection: its bell, the namespaces that fired and were not taken yet, and the
        /// positions of those that fired, until the follower connects to them (`positions`).
        var connections: [UInt64: (bell: AsyncStream<Void>.Continuation, fired: Set<String>, firedAt: [String: LogID?])] = [:]
    }

    private let state = Mutex(State())
    /// How many watches are registered (the commit path's fast check).
    private let watchCount = Atomic<Int>(0)

    /// A connection that may register watches; `bell` is rung when one of them fires.
    func add(connection: UInt64, bell: AsyncStream<Void>.Continuation) {
        self.state.withLock { $0.connections[connection] = (bell, [], [:]) }
    }

    /// The connection closed: its watches end unfired (the log server holds their positions for
    /// retention only while the connection lasts).
    func remove(connection: UInt64) {
        self.state.withLock { state in
            state.connections[connection] = nil
            for (namespace, watchers) in state.watching {
                guard watchers[connection] != nil else { continue }
                state.watching[namespace]![connection] = nil
                if state.watching[namespace]!.isEmpty { state.watching[namespace] = nil }
                self.watchCount.subtract(1, ordering: .relaxed)
            }
        }
    }

    /// Registers (or replaces) `connection`'s watch of `namespace` for an entry after `after`.
    /// The caller then reads the namespace's newest entry and calls `fire` when it is newer.
    func watch(connection: UInt64, namespace: String, after: LogID?) {
        self.state.withLock { state in
            guard state.connections[connection] != nil else { return }
            if state.watching[namespace, default: [:]].updateValue(after, forKey: connection) == nil {
                self.watchCount.add(1, ordering: .sequentiallyConsistent)
            }
        }
    }

    /// Fires `connection`'s watch of `namespace` (when it still has one).
    func fire(connection: UInt64, namespace: String) {
        let bell = self.state.withLock { state -> AsyncStream<Void>.Continuation? in
            guard let after = state.watching[namespace]?.removeValue(forKey: connection) else { return nil }
            if state.watching[namespace]!.isEmpty { state.watching[namespace] = nil }
            self.watchCount.subtract(1, ordering: .relaxed)
            state.connections[connection]?.fired.insert(namespace)
            state.connections[connection]?.firedAt[namespace] = after
            return state.connections[connection]?.bell
        }
        bell?.yield()
    }

    /// What `connection`'s follower still needs kept of each namespace it parked: the position
    /// of every watch, and of every fired one whose namespace `reconnected` does not say the
    /// follower connected to since (those are forgotten). For log retention, which keeps what
    /// followers need (`FollowerRegistry.hold`, refreshed while the connection lasts).
    func positions(connection: UInt64, reconnected: (String) -> Bool) -> [String: LogID?] {
        self.state.withLock { state in
            guard var entry = state.connections[connection] else { return [:] }
            entry.firedAt = entry.firedAt.filter { !reconnected($0.key) }
            state.connections[connection] = entry
            var positions = entry.firedAt
            for (namespace, watchers) in state.watching {
                if let after = watchers[connection] { positions[namespace] = after }
            }
            return positions
        }
    }

    /// A durable commit of `namespace` whose newest entry is `newest`: fires the watches that
    /// named an older entry.
    func committed(_ namespace: String, newest: LogID) {
        guard self.watchCount.load(ordering: .sequentiallyConsistent) > 0 else { return }
        let bells = self.state.withLock { state -> [AsyncStream<Void>.Continuation] in
            guard let watchers = state.watching[namespace] else { return [] }
            var bells: [AsyncStream<Void>.Continuation] = []
            for (connection, after) in watchers where after.map({ $0 < newest }) ?? true {
                state.watching[namespace]![connection] = nil
                self.watchCount.subtract(1, ordering: .relaxed)
                if let bell = state.connections[connection]?.bell {
                    state.connections[connection]!.fired.insert(namespace)
                    state.connections[connection]!.firedAt[namespace] = after
                    bells.append(bell)
                }
            }
            if state.watching[namespace]!.isEmpty { state.watching[namespace] = nil }
            return bells
        }
        for bell in bells { bell.yield() }
    }

    /// The namespaces of `connection` whose watches fired since the last call, sorted.
    func takeFired(connection: UInt64) -> [String] {
        self.state.withLock { state -> [String] in
            guard let fired = state.connections[connection]?.fired, !fired.isEmpty else { return [] }
            state.connections[connection]!.fired = []
            return fired.sorted()
        }
    }
}
