// The leader's wait for followers (`--sync-followers`): a write is released exactly when enough
// followers of its namespace acknowledged it or anything after it, whether the acknowledgement
// comes before or after the write starts waiting; a forged acknowledgement releases nothing; a
// wait that outlives its timeout fails with how many had applied. A concurrent run (64 waiters,
// acknowledgements racing their registration) releases every waiter once; it prints its seed.

import EddyModel
import Testing

@testable import EddyReplication

@Suite struct FollowerRegistryTests {
    /// Ids in log order.
    private func ids(_ count: Int) -> [LogID] {
        var generator = PushIDGenerator()
        return (0..<count).map { generator.next(nowMilliseconds: 1_700_000_000_000 + UInt64($0)) }
    }

    @Test func aWriteIsReleasedWhenEnoughFollowersOfItsNamespaceApplied() async {
        let registry = FollowerRegistry()
        let log = self.ids(10)
        let a = registry.add(name: "a", namespace: "default", applied: nil)
        let b = registry.add(name: "b", namespace: "default", applied: nil)
        let other = registry.add(name: "c", namespace: "other", applied: nil)
        for follower in [a, b, other] { registry.sent(follower, upTo: log[9], count: 10) }
        #expect(registry.applied(a, log[2]))
        // Already applied by one: a wait for one returns at once, a wait for two does not yet.
        let one = await registry.waitForApplied(log[2], namespace: "default", count: 1, timeout: .seconds(5))
        #expect(one.confirmed && one.applied == 1)
        async let two = registry.waitForApplied(log[5], namespace: "default", count: 2, timeout: .seconds(300))  // a backstop only
        try? await Task.sleep(for: .milliseconds(50))
        #expect(registry.applied(other, log[9]), "another namespace's follower does not count")
        #expect(registry.applied(a, log[7]))
        #expect(registry.applied(b, log[5]))
        let released = await two
        #expect(released.confirmed && released.applied == 2)
    }

    @Test func aBootstrapCheckHoldsItsPositionUntilTheSessionConnectsOrTheHoldExpires() async throws {
        let registry = FollowerRegistry()
        let log = self.ids(5)
        #expect(registry.oldestApplied(namespace: "default") == nil, "no follower: nothing is needed")
        let check = registry.add(name: "f", namespace: "default", applied: log[2])
        registry.remove(check, holdFor: .seconds(60))
        #expect(registry.oldestApplied(namespace: "default") == .some(log[2]), "held after the check ended")
        #expect(registry.oldestApplied(namespace: "other") == nil)
        let session = registry.add(name: "f", namespace: "default", applied: log[4])
        #expect(registry.oldestApplied(namespace: "default") == .some(log[4]), "the session replaces the hold")
        registry.remove(session)
        #expect(registry.oldestApplied(namespace: "default") == nil, "a session's end holds nothing")
        let empty = registry.add(name: "g", namespace: "default", applied: nil)
        registry.remove(empty, holdFor: .milliseconds(50))
        #expect(registry.oldestApplied(namespace: "default") == .some(nil), "an empty replica needs the whole log")
        try await Task.sleep(for: .milliseconds(120))
        #expect(registry.oldestApplied(namespace: "default") == nil, "the hold expired")
    }

    @Test func aForgedAcknowledgementReleasesNothingAndAWaitTimesOut() async {
        let registry = FollowerRegistry()
        let log = self.ids(4)
        let a = registry.add(name: "a", namespace: "default", applied: nil)
        registry.sent(a, upTo: log[1], count: 2)
        #expect(!registry.applied(a, log[3]), "beyond what was sent: refused")
        let result = await registry.waitForApplied(log[3], namespace: "default", count: 1, timeout: .milliseconds(60))
        #expect(!result.confirmed && result.applied == 0)
        #expect(registry.applied(a, log[1]))
        let late = await registry.waitForApplied(log[1], namespace: "default", count: 1, timeout: .milliseconds(60))
        #expect(late.confirmed && late.applied == 1)
    }

    @Test func concurrentWaitersAndAcknowledgementsReleaseEveryWaiterOnce() async {
        let seed = UInt64.random(in: 0..<(1 << 40))
        print("FollowerRegistryTests.concurrentWaitersAndAcknowledgementsReleaseEveryWaiterOnce seed=\(seed)")
        var random = SplitMix64(seed: seed)
        let registry = FollowerRegistry()
        let log = self.ids(640)
        let followers = (0..<2).map { registry.add(name: "f\($0)", namespace: "default", applied: nil) }
        for follower in followers { registry.sent(follower, upTo: log[639], count: 640) }
        // Each follower acknowledges in steps of its own random sizes while 64 writers wait for
        // ids spread over the log, both followers required.
        let steps = followers.map { _ in (0..<40).map { _ in Int(random.next() % 31) + 1 } }
        let results = await withTaskGroup(of: Bool.self) { group -> [Bool] in
            for writer in 0..<64 {
                let id = log[writer * 10 + 9]
                // The timeout only ends a hung run: the suite runs beside tests that load both
                // cores (large values through a debug eddyd), which has held this one's
                // acknowledging tasks back for over 30 s.
                group.addTask { await registry.waitForApplied(id, namespace: "default", count: 2, timeout: .seconds(300)).confirmed }
            }
            for (n, follower) in followers.enumerated() {
                let mine = steps[n]
                group.addTask {
                    var position = 0
                    for step in mine {
                        position = min(position + step, 639)
                        _ = registry.applied(follower, log[position])
                        await Task.yield()
                    }
                    _ = registry.applied(follower, log[639])
                    return true
                }
            }
            var results: [Bool] = []
            for await result in group { results.append(result) }
            return results
        }
        #expect(results.count == 66 && results.allSatisfy { $0 }, "every waiter released (seed \(seed))")
    }
}

/// A small seeded generator, so a failing interleaving's acknowledgement steps can be rerun.
private struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { self.state = seed }
    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
