// `/.health/live` and `/.health/ready`, for load balancers, orchestrators and systemd probes.
// They need no credential and read no data.
// - live: 200 whenever the process answers HTTP.
// - ready: 200 when this node can serve its role: the default namespace's storage is open and
//   not failed; on a leader it also takes writes (not read-only, not below the disk reserve); on
//   a follower it is connected to its leader, replication has not stopped, and its replica is
//   at most `readyLagMaxSeconds` behind the leader's last entry. Otherwise 503 with the reason.
// Both answer `{"status": "...", ...}` as JSON (GET only).

import EddyEngine
import EddyModel
import EddyReplication

struct HealthEndpoint: Sendable {
    let data: DataDirectory
    let replication: ReplicationRole
    let readyLagMaxSeconds: Double

    enum Probe: String {
        case live, ready
    }

    /// The probe `path` names (`/.health/live`, `/.health/ready`, `.json` allowed); nil otherwise.
    static func probe(_ path: String) -> Probe? {
        guard path.hasPrefix("/.health/") else { return nil }
        var name = path.dropFirst("/.health/".count)
        if name.hasSuffix(".json") { name = name.dropLast(5) }
        return Probe(rawValue: String(name))
    }

    /// (ready, body) for `probe`.
    func check(_ probe: Probe) -> (ok: Bool, body: Value) {
        switch probe {
        case .live:
            return (true, .object(["status": .string("live")]))
        case .ready:
            if let reason = self.notReadyReason() {
                return (false, .object(["status": .string("not ready"), "reason": .string(reason)]))
            }
            return (true, .object(["status": .string("ready")]))
        }
    }

    private func notReadyReason() -> String? {
        let engine: Engine
        do {
            engine = try self.data.engine(namespace: DataDirectory.defaultNamespace, create: false)
        } catch {
            return "storage is not open: \(error.message)"
        }
        let health = engine.health
        switch self.replication {
        case .leader:
            guard health.state == .writable else { return "storage is \(health.state.rawValue): \(health.reason ?? "writes are refused")" }
            return nil
        case .follower(let service):
            if health.state == .failed { return "storage failed: \(health.reason ?? "see the log")" }
            let status = service.status
            if status.stopped { return "replication stopped: \(status.lastError ?? "see the log")" }
            guard status.connected else {
                return "not connected to the leader at \(service.leader)" + (status.lastError.map { ": \($0)" } ?? "")
            }
            let applied = try? engine.lastLogID()
            if (applied ?? nil) == nil, status.leaderLast != nil {
                // Its lag by push-id time would be the leader's last entry's age since 1970.
                return "the replica holds none of the leader's log yet (catching up)"
            }
            let lagSeconds = FollowerRegistry.lagMilliseconds(leaderLast: status.leaderLast, applied: applied ?? nil) / 1000
            if lagSeconds > self.readyLagMaxSeconds {
                return "the replica is \(lagSeconds) s behind the leader (ready-lag-max-seconds: \(self.readyLagMaxSeconds))"
            }
            return nil
        }
    }
}
