// Whether this daemon leads (serving followers from its log server) or follows a leader, and
// its replication status as one JSON object (`GET /.settings/followers.json`, the native
// `status` request, `eddy followers`):
//   leader:   {"role": "leader", "last": <log id>, "followers": {<name>: {applied, lagMilliseconds, ...}}}
//   follower: {"role": "follower", "leader": <socket>, "connected": bool, "applied": <log id>,
//              "leaderLast": <log id>, "lagMilliseconds": n, "error": <text>|null, "stopped": bool,
//              "parked": bool, "namespaces": [<every namespace replicated>]}  (the figures are the
//              namespace asked for; `parked`: its session ended while idle to let another namespace
//              replicate, and it resumes when the leader writes it; see FollowerSupervisor)

import EddyEngine
import EddyModel

public enum ReplicationRole: Sendable {
    /// `syncFollowers`: writes are confirmed only once this many followers applied them.
    case leader(FollowerRegistry, syncFollowers: Int = 0, syncTimeout: Duration = .seconds(5))
    case follower(FollowerSupervisor)

    /// With `--sync-followers N` on a leader: returns once N connected followers applied the
    /// committed write `id`; throws `unavailable` when that takes longer than the timeout. The
    /// write stays committed on the leader either way (it is durable there and will replicate):
    /// the error says it was not confirmed, never a silent downgrade.
    public func confirm(_ id: LogID, namespace: String) async throws(EddyError) {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, EddyError>, Never>) in
            self.confirm(id, namespace: namespace) { continuation.resume(returning: $0) }
        }
        try result.get()
    }

    /// `confirm` for callers that do not await: `completion` runs once, at once when no
    /// confirmation is needed, else on the thread that records the follower's acknowledgement
    /// or expires the wait (it must not block).
    public func confirm(_ id: LogID, namespace: String, completion: @escaping @Sendable (Result<Void, EddyError>) -> Void) {
        guard case .leader(let registry, let count, let timeout) = self, count > 0 else {
            completion(.success(()))
            return
        }
        registry.whenApplied(id, namespace: namespace, count: count, timeout: timeout) { confirmed in
            guard !confirmed else {
                completion(.success(()))
                return
            }
            let applied = registry.countApplied(id, namespace: namespace)
            let milliseconds = timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
            completion(
                .failure(
                    EddyError(
                        .unavailable,
                        "the write \(id) is committed on the leader, but only \(applied) of the \(count) followers that --sync-followers requires applied it within \(milliseconds) ms; it is not confirmed as replicated"
                    )))
        }
    }

    public func status(_ engine: Engine, namespace: String) throws(EddyError) -> Value {
        switch self {
        case .leader(let registry, let syncFollowers, _):
            let last = try engine.lastLogID()
            return .object([
                "role": .string("leader"),
                "syncFollowers": .number(Double(syncFollowers)),
                "last": last.map { .string($0.rawValue) } ?? .null,
                "followers": .object(registry.status(namespace: namespace, leaderLast: last)),
            ])
        case .follower(let service):
            let status = service.status(namespace: namespace)
            let applied = try engine.lastLogID()
            let lag = FollowerRegistry.lagMilliseconds(leaderLast: status.leaderLast, applied: applied)
            return .object([
                "role": .string("follower"),
                "leader": .string(service.leader),
                "connected": .bool(status.connected),
                "applied": applied.map { .string($0.rawValue) } ?? .null,
                "leaderLast": status.leaderLast.map { .string($0.rawValue) } ?? .null,
                "lagMilliseconds": .number(lag),
                "error": status.lastError.map { .string($0) } ?? .null,
                "stopped": .bool(status.stopped),
                "parked": .bool(status.parked),
                "namespaces": .object(Dictionary(uniqueKeysWithValues: service.namespaces.enumerated().map { (String($0.offset), Value.string($0.element)) })),
            ])
        }
    }
}
