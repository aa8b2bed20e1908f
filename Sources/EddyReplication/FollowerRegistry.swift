// The leader's view of its connected followers, for `eddy followers` and
// `GET /.settings/followers.json`: who they are, what was sent to them, what they applied, and
// their lag. Lag is time: the leader's newest durable entry's timestamp minus the follower's
// last applied entry's (push ids carry their millisecond timestamp), so it needs no counting.
// Log retention keeps what the connected followers still need (`oldestApplied`), and for a
// while what a follower's bootstrap check left it at (`remove(_:holdFor:)`): between that check
// (or snapshot) and its replication session the follower is not connected, and a leader
// pruning meanwhile would refuse the session it just prepared. Thread-safe.

import EddyModel
import Foundation
import Synchronization

public final class FollowerRegistry: Sendable {
    struct Follower {
        var name: String
        var namespace: String
        var connectedMilliseconds: UInt64
        var sent: LogID?
        var applied: LogID?
        var entriesSent = 0
    }

    private struct Waiter {
        var id: LogID
        var namespace: String
        var count: Int
        var deadline: ContinuousClock.Instant
        /// Called once, outside the lock: true when confirmed, false when the deadline passed.
        var done: @Sendable (Bool) -> Void
    }

    private let followers = Mutex<[UInt64: Follower]>([:])
    /// Positions held after a bootstrap connection ended, by follower name and namespace, until
    /// that follower connects again or the hold expires.
    private let held = Mutex<[String: (namespace: String, applied: LogID?, until: ContinuousClock.Instant)]>([:])
    private let nextID = Atomic<UInt64>(1)
    /// Writes waiting for followers (`--sync-followers`), by token, and whether the task that
    /// expires them is running (one task for all of them, not a timer per write).
    private let waiters = Mutex<(waiting: [UInt64: Waiter], sweeping: Bool)>(([:], false))
    static let sweepInterval: Duration = .milliseconds(10)

    public init() {}

    func add(name: String, namespace: String, applied: LogID?) -> UInt64 {
        let id = self.nextID.add(1, ordering: .relaxed).oldValue
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        self.followers.withLock {
            $0[id] = Follower(name: name, namespace: namespace, connectedMilliseconds: now, sent: applied, applied: applied)
        }
        // Connected again: what it holds is its own business now.
        _ = self.held.withLock { $0.removeValue(forKey: Self.heldKey(name, namespace)) }
        return id
    }

    /// The follower is gone. With `holdFor`, what it applied stays needed (for log retention)
    /// for that long or until the same follower connects to that namespace again.
    func remove(_ id: UInt64, holdFor: Duration? = nil) {
        guard let follower = self.followers.withLock({ $0.removeValue(forKey: id) }), let holdFor else { return }
        self.held.withLock {
            $0[Self.heldKey(follower.name, follower.namespace)] = (follower.namespace, follower.applied, ContinuousClock.now + holdFor)
        }
    }

    /// Whether follower `name` has a connection to `namespace` now.
    func isConnected(name: String, namespace: String) -> Bool {
        self.followers.withLock { $0.values.contains { $0.name == name && $0.namespace == namespace } }
    }

    /// Holds what follower `name` applied of `namespace` (for log retention) for `duration` or
    /// until it connects to that namespace again: a namespace it parked (see NamespaceWatches).
    func hold(name: String, namespace: String, applied: LogID?, for duration: Duration) {
        self.held.withLock { $0[Self.heldKey(name, namespace)] = (namespace, applied, ContinuousClock.now + duration) }
    }

    private static func heldKey(_ name: String, _ namespace: String) -> String { namespace + "\u{0}" + name }

    func sent(_ id: UInt64, upTo last: LogID, count: Int) {
        self.followers.withLock {
            $0[id]?.sent = last
            $0[id]?.entriesSent += count
        }
    }

    /// Records what a follower applied; false (nothing recorded) when that is beyond what was
    /// sent to it: a forged acknowledgement.
    func applied(_ id: UInt64, _ last: LogID) -> Bool {
        let accepted = self.followers.withLock { followers -> Bool in
            guard let follower = followers[id] else { return true }
            guard let sent = follower.sent, !(sent < last) else { return false }
            followers[id]?.applied = last
            return true
        }
        if accepted { self.releaseWaiters() }
        return accepted
    }

    /// How many connected followers have not applied the newest entry of their namespace, which
    /// `newest` names (asked once per namespace; nil when there is nothing to wait for: the
    /// namespace has no entry, or it is not open).
    public func followersBehind(_ newest: (String) -> LogID?) -> Int {
        let positions = self.appliedPositions()
        var last: [String: LogID?] = [:]
        var behind = 0
        for (namespace, applied) in positions {
            if last[namespace] == nil { last[namespace] = .some(newest(namespace)) }
            guard let id = last[namespace]! else { continue }
            if applied.map({ $0 < id }) ?? true { behind += 1 }
        }
        return behind
    }

    /// How many connected followers of `namespace` applied `id` (or later).
    func countApplied(_ id: LogID, namespace: String) -> Int {
        Self.count(self.appliedPositions(), applied: id, namespace: namespace)
    }

    /// Every connected follower's namespace and last applied id, read under the lock once.
    private func appliedPositions() -> [(namespace: String, applied: LogID?)] {
        self.followers.withLock { followers in followers.values.map { ($0.namespace, $0.applied) } }
    }

    private static func count(_ positions: [(namespace: String, applied: LogID?)], applied id: LogID, namespace: String) -> Int {
        positions.count { $0.namespace == namespace && $0.applied.map { !($0 < id) } == true }
    }

    /// Resumes the waiters that enough followers have now acknowledged. The followers' positions
    /// are read once, not once per waiter: with 64 writers waiting, every acknowledgement scanned
    /// the follower table 64 times under the waiters' lock (a tenth of a leader's CPU with
    /// `--sync-followers 1`).
    private func releaseWaiters() {
        let positions = self.appliedPositions()
        let ready = self.waiters.withLock { waiters -> [@Sendable (Bool) -> Void] in
            var ready: [@Sendable (Bool) -> Void] = []
            for (token, waiter) in waiters.waiting where Self.count(positions, applied: waiter.id, namespace: waiter.namespace) >= waiter.count {
                ready.append(waiter.done)
                waiters.waiting.removeValue(forKey: token)
            }
            return ready
        }
        for done in ready { done(true) }
    }

    /// Waits until `count` connected followers of `namespace` applied `id`; false when
    /// `timeout` passes first (checked every `sweepInterval`). Returns with how many had
    /// applied it.
    func waitForApplied(_ id: LogID, namespace: String, count: Int, timeout: Duration) async -> (confirmed: Bool, applied: Int) {
        let confirmed = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            self.whenApplied(id, namespace: namespace, count: count, timeout: timeout) { continuation.resume(returning: $0) }
        }
        return (confirmed, self.countApplied(id, namespace: namespace))
    }

    /// Calls `done` once `count` connected followers of `namespace` applied `id` (true), or
    /// when `timeout` passes first (false), on the caller's thread when already applied and
    /// otherwise on the thread that records the acknowledgement or expires the wait. `done` must
    /// not block. Without a task or a continuation per write: a synchronous follower's leader
    /// calls this for every write.
    func whenApplied(_ id: LogID, namespace: String, count: Int, timeout: Duration, _ done: @escaping @Sendable (Bool) -> Void) {
        if self.countApplied(id, namespace: namespace) >= count {
            done(true)
            return
        }
        let token = self.nextID.add(1, ordering: .relaxed).oldValue
        let startSweeper = self.waiters.withLock { waiters -> Bool in
            waiters.waiting[token] = Waiter(id: id, namespace: namespace, count: count, deadline: .now.advanced(by: timeout), done: done)
            defer { waiters.sweeping = true }
            return !waiters.sweeping
        }
        if startSweeper { Task { await self.sweep() } }
        // An acknowledgement may have come in between the check above and the insertion: it
        // found no waiter to release. Only this waiter needs looking at again (whoever removes
        // it from the table calls it).
        if self.countApplied(id, namespace: namespace) >= count, let mine = self.waiters.withLock({ $0.waiting.removeValue(forKey: token) }) {
            mine.done(true)
        }
    }

    /// Fails the waiters whose deadline passed, until none is left.
    private func sweep() async {
        while true {
            try? await Task.sleep(for: Self.sweepInterval)
            let now = ContinuousClock.now
            let (expired, done) = self.waiters.withLock { waiters -> ([@Sendable (Bool) -> Void], Bool) in
                var expired: [@Sendable (Bool) -> Void] = []
                for (token, waiter) in waiters.waiting where waiter.deadline <= now {
                    expired.append(waiter.done)
                    waiters.waiting.removeValue(forKey: token)
                }
                if waiters.waiting.isEmpty { waiters.sweeping = false }
                return (expired, !waiters.sweeping)
            }
            for expire in expired { expire(false) }
            if done { return }
        }
    }

    /// What the connected followers of `namespace` (and the held positions) still need: nil
    /// when there are none; `.some(nil)` when one needs the whole log (it has applied nothing yet).
    func oldestApplied(namespace: String) -> LogID?? {
        var applied = self.followers.withLock { $0.values.filter { $0.namespace == namespace }.map(\.applied) }
        let now = ContinuousClock.now
        applied += self.held.withLock { held in
            held = held.filter { $0.value.until > now }
            return held.values.filter { $0.namespace == namespace }.map(\.applied)
        }
        if applied.isEmpty { return nil }
        if applied.contains(where: { $0 == nil }) { return .some(nil) }
        return .some(applied.compactMap { $0 }.min())
    }

    /// The connected followers of `namespace` by name (a name connected twice shows its newest
    /// connection), with their applied id and lag behind `leaderLast`.
    /// How far `applied` is behind `leaderLast`, in milliseconds of push-id time (0 when caught
    /// up or when the leader has no entry; all of it when nothing was applied).
    public static func lagMilliseconds(leaderLast: LogID?, applied: LogID?) -> Double {
        guard let leaderLast, applied != leaderLast else { return 0 }
        return Double(leaderLast.timestampMilliseconds - min(applied?.timestampMilliseconds ?? 0, leaderLast.timestampMilliseconds))
    }

    public func status(namespace: String, leaderLast: LogID?) -> [String: Value] {
        let list = self.followers.withLock { $0.sorted { $0.key < $1.key }.map(\.value) }.filter { $0.namespace == namespace }
        var result: [String: Value] = [:]
        for follower in list {
            let lag = Self.lagMilliseconds(leaderLast: leaderLast, applied: follower.applied)
            result[follower.name] = .object([
                "ns": .string(follower.namespace),
                "connectedAt": .number(Double(follower.connectedMilliseconds)),
                "sent": follower.sent.map { .string($0.rawValue) } ?? .null,
                "applied": follower.applied.map { .string($0.rawValue) } ?? .null,
                "entriesSent": .number(Double(follower.entriesSent)),
                "caughtUp": .bool(follower.applied == leaderLast),
                "lagMilliseconds": .number(lag),
            ])
        }
        return result
    }
}
