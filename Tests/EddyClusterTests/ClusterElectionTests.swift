// ClusterElection against a real etcd: who wins, failover after a crash with a higher term, no
// two leaders at once, and the fence of a leader that etcd cannot hear.

import EddyModel
import Foundation
import Logging
import Synchronization
import Testing

@testable import EddyCluster

@Suite(.enabled(if: EtcdProcess.available, Comment(rawValue: EtcdProcess.missing)), .serialized)
struct ClusterElectionTests {
    static let logger = Logger(label: "test")

    static func election(_ node: String, etcd: EtcdProcess, ttl: Int = 1, applied: LogID? = nil) throws -> ClusterElection {
        try ClusterElection(
            .init(cluster: "test", node: node, leaseTTLSeconds: ttl, http: "http://\(node)"), etcd: try EtcdClient(urls: [etcd.clientURL]),
            logger: Self.logger, applied: { applied }, onChange: { _ in })
    }

    static func start(_ election: ClusterElection) {
        Thread.detachNewThread { election.run() }
    }

    /// Polls `condition` every 5 ms for up to `seconds`.
    static func eventually(_ seconds: Double = 20, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.005)
        }
        return condition()
    }

    @Test func theMostUpToDateLiveNodeWins() throws {
        let etcd = try EtcdProcess()
        defer { etcd.stop() }
        let client = try EtcdClient(urls: [etcd.clientURL])
        let older = LogID.first(atMilliseconds: 1_000)
        let newer = LogID.first(atMilliseconds: 2_000)
        // A live node that applied more than `a`.
        let lease = try client.grantLease(ttlSeconds: 60)
        try client.put("/eddy/test/nodes/b", value: ClusterNodeRecord(node: "b", applied: newer).bytes, lease: lease)

        let a = try Self.election("a", etcd: etcd, ttl: 60, applied: older)
        a.tick()
        #expect(a.role == .follower(leader: nil, term: nil), "nobody campaigns on the first tick without a leader")
        a.tick()
        #expect(a.role == .follower(leader: nil, term: nil), "a node behind a live one does not campaign")
        #expect(try client.get("/eddy/test/leader") == nil)

        try client.revoke(lease: lease)  // b dies before it campaigned
        a.tick()
        guard case .leader(let term) = a.role else {
            Issue.record("the most up-to-date live node did not win: \(a.role)")
            return
        }
        #expect(a.leaderTerm() == term)
        #expect(try client.get("/eddy/test/leader")?.createRevision == term)

        let c = try Self.election("c", etcd: etcd, ttl: 60, applied: newer)
        c.tick()
        #expect(c.role == .follower(leader: ClusterNodeRecord(node: "a", applied: older, http: "http://a"), term: term),
            "a live leader is followed even by a node ahead of it")
        #expect(c.leaderTerm() == nil)
    }

    @Test func ranksByAppliedThenNodeID() {
        let one = LogID.first(atMilliseconds: 1)
        let two = LogID.first(atMilliseconds: 2)
        #expect(ClusterNodeRecord.isBehind(.init(node: "z", applied: nil), .init(node: "a", applied: one)))
        #expect(ClusterNodeRecord.isBehind(.init(node: "z", applied: one), .init(node: "a", applied: two)))
        #expect(ClusterNodeRecord.isBehind(.init(node: "a", applied: two), .init(node: "b", applied: two)))
        #expect(!ClusterNodeRecord.isBehind(.init(node: "b", applied: two), .init(node: "a", applied: two)))
        // The term of the newest entry ranks first: a newer id from an older term (a deposed
        // leader's clock ahead) loses to the newer term.
        #expect(ClusterNodeRecord.isBehind(.init(node: "z", applied: two, term: 5), .init(node: "a", applied: one, term: 7)))
        #expect((try? ClusterNodeRecord(bytes: ClusterNodeRecord(node: "a", applied: one, term: 7).bytes))?.term == 7)
    }

    @Test func aCrashedLeaderIsReplacedWithAHigherTermAndNeverTwoLeadersAtOnce() throws {
        let etcd = try EtcdProcess()
        defer { etcd.stop() }
        let a = try Self.election("a", etcd: etcd)
        let b = try Self.election("b", etcd: etcd)
        Self.start(a)
        Self.start(b)
        defer {
            a.stop()
            b.stop()
        }
        var overlaps = 0
        func leaders() -> [ClusterElection] {
            let now = ContinuousClock.now
            let holding = [a, b].filter { $0.leaderTerm(at: now) != nil }
            if holding.count > 1 { overlaps += 1 }
            return holding
        }
        #expect(Self.eventually { leaders().count == 1 }, "no leader was elected")
        guard let first = leaders().first, let firstTerm = first.leaderTerm() else { return }
        let other = first === a ? b : a
        first.stop(revokeLease: false)  // a crash: the lease runs out on its own
        #expect(Self.eventually { other.leaderTerm() != nil }, "the survivor never took over")
        let secondTerm = other.leaderTerm() ?? 0
        #expect(secondTerm > firstTerm, "term \(secondTerm) after \(firstTerm)")
        #expect(first.leaderTerm() == nil)
        #expect(overlaps == 0, "two nodes held the lease at once \(overlaps) times")
    }

    @Test func aGracefulStopHandsOverWithoutWaitingForTheTTL() throws {
        let etcd = try EtcdProcess()
        defer { etcd.stop() }
        // A TTL far beyond the wait below: only the revoked lease can explain a takeover.
        let a = try Self.election("a", etcd: etcd, ttl: 120)
        a.tick()
        a.tick()  // campaigns on its second tick without a leader
        let b = try Self.election("b", etcd: etcd, ttl: 120)
        Self.start(b)
        defer { b.stop() }
        #expect(a.leaderTerm() != nil)
        guard Self.eventually(20, { if case .follower(let leader?, _) = b.role { leader.node == "a" } else { false } }) else {
            Issue.record("b never followed a: \(b.role)")
            return
        }
        Self.start(a)
        a.stop()
        #expect(Self.eventually(30) { b.leaderTerm() != nil }, "the follower did not take over after a graceful stop")
    }

    @Test func aLeaderThatCannotReachEtcdStopsWithinItsTTL() throws {
        let etcd = try EtcdProcess()
        defer { etcd.stop() }
        let ttl = 2
        let a = try Self.election("a", etcd: etcd, ttl: ttl)
        Self.start(a)
        defer { a.stop() }
        #expect(Self.eventually { a.leaderTerm() != nil }, "no leader was elected")
        let pausedAt = ContinuousClock.now
        etcd.pause()
        // The lease may still be held in etcd's eyes until TTL after the last keepalive, which
        // was sent before the pause: by then the leader must have stopped on its own.
        Thread.sleep(until: Date().addingTimeInterval(Double(ttl) - Self.seconds(ContinuousClock.now - pausedAt)))
        #expect(a.leaderTerm() == nil, "a leader cut off from etcd still claims the lease after its TTL")
        #expect(a.lastError != nil || a.role == .follower(leader: nil, term: nil))
        etcd.resume()
        #expect(Self.eventually(30) { a.leaderTerm() != nil }, "the node did not lead again once etcd came back")
    }

    @Test func namesAreChecked() throws {
        let etcd = try EtcdClient(urls: ["http://127.0.0.1:1"])
        for (cluster, node, ttl) in [("", "a", 5), ("a/b", "a", 5), ("c", "", 5), ("c", "x y", 5), ("c", "a", 0)] {
            #expect(throws: EddyError.self) {
                try ClusterElection(
                    .init(cluster: cluster, node: node, leaseTTLSeconds: ttl), etcd: etcd, logger: Self.logger, applied: { nil },
                    onChange: { _ in })
            }
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
