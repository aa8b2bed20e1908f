// Whether this daemon leads (serving followers from its log server) or follows a leader, and
// its replication status as one JSON object (`GET /.settings/followers.json`, the native
// `status` request, `eddy followers`):
//   leader:   {"role": "leader", "last": <log id>, "followers": {<name>: {applied, lagMilliseconds, ...}}}
//   follower: {"role": "follower", "leader": <socket>, "connected": bool, "applied": <log id>,
//              "leaderLast": <log id>, "lagMilliseconds": n, "error": <text>|null, "stopped": bool}

import EddyEngine
import EddyModel

public enum ReplicationRole: Sendable {
    case leader(FollowerRegistry)
    case follower(FollowerService)

    public func status(_ engine: Engine, namespace: String) throws(EddyError) -> Value {
        switch self {
        case .leader(let registry):
            let last = try engine.lastLogID()
            return .object([
                "role": .string("leader"),
                "last": last.map { .string($0.rawValue) } ?? .null,
                "followers": .object(registry.status(namespace: namespace, leaderLast: last)),
            ])
        case .follower(let service):
            let status = service.status
            let applied = try engine.lastLogID()
            var lag = 0.0
            if let leaderLast = status.leaderLast, leaderLast != applied {
                lag = Double(leaderLast.timestampMilliseconds - min(applied?.timestampMilliseconds ?? 0, leaderLast.timestampMilliseconds))
            }
            return .object([
                "role": .string("follower"),
                "leader": .string(service.leader),
                "connected": .bool(status.connected),
                "applied": applied.map { .string($0.rawValue) } ?? .null,
                "leaderLast": status.leaderLast.map { .string($0.rawValue) } ?? .null,
                "lagMilliseconds": .number(lag),
                "error": status.lastError.map { .string($0) } ?? .null,
                "stopped": .bool(status.stopped),
            ])
        }
    }
}
