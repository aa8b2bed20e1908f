// A follower's engine applies the leader's entries (`applyReplicated`) into an identical tree,
// index and log (digests equal), with the leader's ids; it refuses local writes and rules
// changes naming the leader, refuses an entry it already has, and stops at an entry whose
// before-images differ from its own values (a diverged replica), applying nothing after it.

import EddyEngine
import EddyModel
import EddyTesting
import Testing

@Suite struct ReplicatedApplyTests {
    private func openFollower(_ directory: TemporaryDirectory) throws -> Engine {
        var options = EngineOptions(durability: .none)
        options.leader = "/run/eddy/replication.sock"
        return try Engine.open(directory: directory.path, options: options, logger: quietLogger)
    }

    @Test func aReplicaAppliesTheLeadersEntriesIntoTheSameState() async throws {
        let leaderDirectory = TemporaryDirectory("replica-leader")
        let followerDirectory = TemporaryDirectory("replica-follower")
        defer {
            leaderDirectory.remove()
            followerDirectory.remove()
        }
        let leader = try Engine.open(directory: leaderDirectory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { leader.close() }
        let rules = try JSONParser.parse(#"{"rules": {"m": {".indexOn": ["s", ".value"]}}}"#)
        _ = try await leader.setRules(rules)
        _ = try await leader.set(p("/m/a"), try JSONParser.parse(#"{"s": 1, "t": {".sv": "timestamp"}}"#))
        _ = try await leader.push(p("/m"), try JSONParser.parse(#"{"s": 2}"#))
        _ = try await leader.update(p("/m"), [LogEntry.Change(path: p("a/s"), value: .number(5)), LogEntry.Change(path: p("b"), value: .string("x"))])
        _ = try await leader.write(.update(p("/m/a"), [LogEntry.Change(path: p("s"), value: try JSONParser.parse(#"{".sv": {"increment": 2}}"#))]))
        _ = try await leader.remove(p("/m/b"))
        _ = try await leader.set(p("/"), try JSONParser.parse(#"{"m": {"z": {"s": 0}}, "other": true}"#))
        let entries = try leader.readLogEntries(after: nil, limit: 100)
        #expect(entries.count == 6)

        let follower = try self.openFollower(followerDirectory)
        defer { follower.close() }
        _ = try await follower.applyReplicatedRules(rules)
        try await follower.waitForIndexes()
        try await follower.applyReplicated(Array(entries.prefix(3)))
        try await follower.applyReplicated(Array(entries.dropFirst(3)))
        #expect(try follower.lastLogID() == entries.last?.id)
        #expect(try follower.readLogEntries(after: nil, limit: 100) == entries)
        #expect(try follower.digest() == leader.digest())
        #expect(try follower.verify().isHealthy)

        await expectEddyError(.notLeader, mentioning: ["/run/eddy/replication.sock"]) { _ = try await follower.set(p("/x"), .number(1)) }
        await expectEddyError(.notLeader, mentioning: ["read-only follower"]) { _ = try await follower.setRules(rules) }
        await expectEddyError(.invalidArgument, mentioning: ["not after the last applied entry"]) {
            try await follower.applyReplicated([entries[2]])
        }
    }

    @Test func aDivergedReplicaStopsAtTheFirstEntryItCannotApply() async throws {
        let leaderDirectory = TemporaryDirectory("diverged-leader")
        let followerDirectory = TemporaryDirectory("diverged-follower")
        defer {
            leaderDirectory.remove()
            followerDirectory.remove()
        }
        // The replica got a value of its own at /a (written while it was not a follower, before
        // any of the leader's entries), so the leader's first entry finds 99 where it had nothing.
        do {
            let local = try Engine.open(directory: followerDirectory.path, options: EngineOptions(durability: .none), logger: quietLogger)
            _ = try await local.set(p("/a"), .number(99))
            local.close()
        }
        let leader = try Engine.open(directory: leaderDirectory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { leader.close() }
        _ = try await leader.set(p("/a"), .number(1))
        _ = try await leader.set(p("/b"), .number(2))
        let entries = try leader.readLogEntries(after: nil, limit: 10)
        let follower = try self.openFollower(followerDirectory)
        defer { follower.close() }
        await expectEddyError(.corruption, mentioning: ["diverged", entries[0].id.rawValue]) {
            try await follower.applyReplicated(entries)
        }
        await expectEddyError(.corruption, mentioning: ["diverged"]) { try await follower.applyReplicated([entries[1]]) }
        #expect(try await follower.get(p("/b")) == .null, "nothing after the failed entry was applied")
    }
}
