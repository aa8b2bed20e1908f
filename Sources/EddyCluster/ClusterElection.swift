// Membership and leader election of one node of an Eddy cluster, on etcd (`EtcdClient`), not
// on a protocol of our own. Keys under `/eddy/<cluster>/`:
//   nodes/<node>  this node's `ClusterNodeRecord` (applied log id, addresses), attached to its
//                 lease and rewritten every tick, so a dead node's record expires with its lease.
//   leader        the leader's record, attached to the leader's lease, created only when absent.
//                 Its create revision is the leadership term: etcd's revisions only grow, so each
//                 new leader has a higher term than every earlier one.
//
// Election: once the leader key has been absent for a whole tick (so every live node has
// republished its record since), the most up-to-date live node (highest applied id, ties broken
// by the higher node id) creates it; the others stay followers and look again next tick. A node
// that is not the most up to date never campaigns, so the winner holds every entry any live node
// applied (with --sync-followers, every acknowledged write).
//
// Fencing: `leaderTerm(at:)` answers only while the lease is provably held. A keepalive sent at
// t that etcd answered with ttl T proves the lease until t + T (etcd starts its countdown when
// it handles the keepalive, after t), less `fenceMargin` for clocks that run at different
// rates. Past that instant the node is not the leader, whether or not it has heard from etcd:
// a partitioned leader stops within its TTL, before etcd lets another node take the key.
//
// Runs on its own thread (`run()`, blocking calls to etcd); `stop()` ends it. A graceful stop
// revokes the lease, so the others elect a new leader at once instead of after the TTL.

import EddyModel
import Foundation
import Logging
import Synchronization

public final class ClusterElection: Sendable {
    public struct Configuration: Sendable {
        public var cluster: String
        public var node: String
        /// The lease's time to live: how long a dead leader holds the cluster without writes.
        public var leaseTTLSeconds: Int
        public var http: String?
        public var replication: String?

        public init(cluster: String, node: String, leaseTTLSeconds: Int = 5, http: String? = nil, replication: String? = nil) {
            self.cluster = cluster
            self.node = node
            self.leaseTTLSeconds = leaseTTLSeconds
            self.http = http
            self.replication = replication
        }

        /// Names usable as etcd key segments and in logs.
        public func validate() throws(EddyError) {
            for (what, name) in [("cluster", self.cluster), ("node id", self.node)] {
                guard !name.isEmpty, name.count <= 128,
                    name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") })
                else {
                    throw EddyError(.invalidArgument, "\(what) \(name.debugDescription) must be 1 to 128 letters, digits, '-', '_' or '.'")
                }
            }
            guard (1...3600).contains(self.leaseTTLSeconds) else {
                throw EddyError(.invalidArgument, "lease TTL \(self.leaseTTLSeconds) s is out of range 1...3600 (seconds)")
            }
        }
    }

    public enum Role: Sendable, Equatable {
        /// The lease holder; `term` is the leader key's create revision.
        case leader(term: Int64)
        /// `leader`: the current leader's record and term, nil while there is none.
        case follower(leader: ClusterNodeRecord?, term: Int64?)
    }

    private struct State {
        var role: Role = .follower(leader: nil, term: nil)
        var lease: Int64?
        /// Until when the lease is proven held (see the file comment).
        var leaseValidUntil: ContinuousClock.Instant?
        var lastError: String?
        var stopped = false
        /// Ticks in a row that found no leader key.
        var leaderAbsentTicks = 0
        /// A follower's last look at the leader's own record (read every tick): what a node
        /// that wins after it logs as the writes that may be lost.
        var lastSeenLeader: ClusterNodeRecord?
    }

    public let configuration: Configuration
    let etcd: EtcdClient
    let applied: @Sendable () -> LogID?
    let appliedTerm: @Sendable () -> UInt64
    let onChange: @Sendable (Role) -> Void
    let logger: Logger
    private let state = Mutex(State())
    private let stopSignal = NSCondition()

    var leaderKey: String { "/eddy/\(self.configuration.cluster)/leader" }
    var nodesPrefix: String { "/eddy/\(self.configuration.cluster)/nodes/" }
    /// How often the node renews its lease, republishes its record and looks at the leader key.
    var tickInterval: Duration { .milliseconds(min(1000, max(100, self.configuration.leaseTTLSeconds * 1000 / 4))) }
    /// Taken off the proven lease time for clock-rate differences.
    var fenceMargin: Duration { .milliseconds(max(100, self.configuration.leaseTTLSeconds * 1000 / 20)) }

    /// `applied`: the newest log entry this node holds, `appliedTerm` its term (both read every
    /// tick; ranked term first, see `ClusterNodeRecord.isBehind`). `onChange` runs on the
    /// election's thread whenever the role, the term or the leader's record changes.
    public init(
        _ configuration: Configuration, etcd: EtcdClient, logger: Logger, applied: @escaping @Sendable () -> LogID?,
        appliedTerm: @escaping @Sendable () -> UInt64 = { 0 }, onChange: @escaping @Sendable (Role) -> Void
    ) throws(EddyError) {
        try configuration.validate()
        self.configuration = configuration
        self.etcd = etcd
        self.logger = logger
        self.applied = applied
        self.appliedTerm = appliedTerm
        self.onChange = onChange
    }

    /// The role as last seen; a leader whose lease is no longer proven reads as a follower.
    public var role: Role {
        let now = ContinuousClock.now
        return self.state.withLock { state in
            if case .leader = state.role, !Self.proven(state, at: now) { return .follower(leader: nil, term: nil) }
            return state.role
        }
    }

    /// The term while this node is the leader and its lease is proven at `now`; nil otherwise.
    /// Writes are accepted only while this answers.
    public func leaderTerm(at now: ContinuousClock.Instant = .now) -> Int64? {
        self.state.withLock { state in
            guard case .leader(let term) = state.role, Self.proven(state, at: now) else { return nil }
            return term
        }
    }

    /// Why the last call to etcd failed, nil after one succeeded.
    public var lastError: String? { self.state.withLock { $0.lastError } }

    private static func proven(_ state: State, at now: ContinuousClock.Instant) -> Bool {
        state.leaseValidUntil.map { now < $0 } ?? false
    }

    // MARK: Running

    /// Ticks until `stop()`; blocking.
    public func run() {
        while !self.state.withLock({ $0.stopped }) {
            let started = ContinuousClock.now
            self.tick()
            self.stopSignal.lock()
            let wake = Date(timeIntervalSinceNow: Self.seconds(self.tickInterval - (ContinuousClock.now - started)))
            while !self.state.withLock({ $0.stopped }), Date() < wake { _ = self.stopSignal.wait(until: wake) }
            self.stopSignal.unlock()
        }
        let lease = self.state.withLock { state -> Int64? in
            defer {
                state.lease = nil
                state.leaseValidUntil = nil
            }
            return state.lease
        }
        if let lease { try? self.etcd.revoke(lease: lease) }
        self.publish(.follower(leader: nil, term: nil))
    }

    /// Ends `run()`. `revokeLease: false` leaves the lease to expire (what a crash does).
    public func stop(revokeLease: Bool = true) {
        self.state.withLock { state in
            state.stopped = true
            if !revokeLease { state.lease = nil }
        }
        self.stopSignal.lock()
        self.stopSignal.broadcast()
        self.stopSignal.unlock()
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// One round: renew (or get) the lease, publish this node's record, then look at the
    /// leader key and campaign when it is absent and this node is the most up to date.
    func tick() {
        do {
            let lease = try self.renewLease()
            guard let lease else {
                self.publish(.follower(leader: nil, term: nil))
                return
            }
            let record = ClusterNodeRecord(
                node: self.configuration.node, applied: self.applied(), term: self.appliedTerm(), http: self.configuration.http,
                replication: self.configuration.replication)
            try self.etcd.put(self.nodesPrefix + self.configuration.node, value: record.bytes, lease: lease)
            var leader = try self.etcd.get(self.leaderKey)
            let absentTicks = self.state.withLock { state in
                state.leaderAbsentTicks = leader == nil ? state.leaderAbsentTicks + 1 : 0
                return state.leaderAbsentTicks
            }
            // Campaign only once the key was already gone a tick ago: every live node has then
            // republished its record since, so the ranking sees what each one applied by now.
            if leader == nil, absentTicks >= 2 {
                let live = try self.etcd.list(prefix: self.nodesPrefix).compactMap { try? ClusterNodeRecord(bytes: $0.value) }
                let best = live.max(by: ClusterNodeRecord.isBehind)
                if best?.node == self.configuration.node {
                    let (created, current) = try self.etcd.createIfAbsent(self.leaderKey, value: record.bytes, lease: lease)
                    if created { self.logWon(term: current?.createRevision ?? 0, applied: record.applied) }
                    leader = current
                }
            }
            self.state.withLock { $0.lastError = nil }
            guard let leader else {
                self.publish(.follower(leader: nil, term: nil))
                return
            }
            if leader.lease == lease {
                self.publish(.leader(term: leader.createRevision))
            } else {
                let leaderRecord = try? ClusterNodeRecord(bytes: leader.value)
                if let name = leaderRecord?.node, let current = try? self.etcd.get(self.nodesPrefix + name),
                    let seen = try? ClusterNodeRecord(bytes: current.value)
                {
                    self.state.withLock { $0.lastSeenLeader = seen }
                }
                self.publish(.follower(leader: leaderRecord, term: leader.createRevision))
            }
        } catch {
            self.state.withLock { $0.lastError = error.message }
            self.logger.warning("etcd unreachable", metadata: ["eddy.error": "\(error.message)"])
            // The role stands; a leader's fence (leaderTerm) runs out on its own.
            self.publish(self.role)
        }
    }

    /// Keeps the lease alive, or gets a new one when there is none or it expired. Returns nil
    /// when it expired (the node lost any leadership; a new lease comes next tick).
    private func renewLease() throws(EddyError) -> Int64? {
        let current = self.state.withLock { $0.lease }
        let sentAt = ContinuousClock.now
        if let current {
            let ttl = try self.etcd.keepAlive(lease: current)
            return self.state.withLock { state -> Int64? in
                guard ttl > 0 else {
                    state.lease = nil
                    state.leaseValidUntil = nil
                    return nil
                }
                state.leaseValidUntil = sentAt + .seconds(ttl) - self.fenceMargin
                return current
            }
        }
        let granted = try self.etcd.grantLease(ttlSeconds: self.configuration.leaseTTLSeconds)
        self.state.withLock { state in
            state.lease = granted
            state.leaseValidUntil = sentAt + .seconds(self.configuration.leaseTTLSeconds) - self.fenceMargin
        }
        return granted
    }

    /// A new leader says what it takes over with, and which writes of the previous leader may be
    /// lost: those after this node's newest entry, up to the newest the previous leader reported
    /// when last seen (with --sync-followers, none acknowledged; without, the lag). The exact
    /// list is written by the previous leader when it rejoins (DATA/discarded).
    private func logWon(term: Int64, applied: LogID?) {
        var metadata: Logger.Metadata = ["eddy.term": "\(term)", "eddy.applied": "\(applied?.rawValue ?? "none")"]
        if let previous = self.state.withLock({ $0.lastSeenLeader }), previous.node != self.configuration.node {
            metadata["eddy.previous_leader"] = "\(previous.node)"
            metadata["eddy.previous_leader_applied"] = "\(previous.applied?.rawValue ?? "none")"
            if let reported = previous.applied, applied.map({ $0 < reported }) ?? true {
                self.logger.warning(
                    "won the election; the previous leader reported entries this node does not have: writes after \(applied?.rawValue ?? "the start") through \(reported.rawValue) may be lost (they are listed in its DATA/discarded when it rejoins)",
                    metadata: metadata)
                return
            }
        }
        self.logger.info("won the election", metadata: metadata)
    }

    private func publish(_ role: Role) {
        let changed = self.state.withLock { state -> Bool in
            defer { state.role = role }
            return state.role != role
        }
        if changed {
            self.logger.info("cluster role", metadata: ["eddy.role": "\(role)"])
            self.onChange(role)
        }
    }
}
