// A deposed leader's replica discards the entries its new leader never had
// (`Engine.discardEntries`): undone from their before-images (tree and indexes) and deleted
// from the log, so the replica equals the new leader at the common entry (digests equal) and
// then applies the new leader's entries, whose before-image checks pass. Refused, with nothing
// changed, beyond `countMax` entries, when the caller cannot keep them first, and on a leader.

import EddyEngine
import EddyModel
import EddyTesting
import Synchronization
import Testing

@Suite struct DiscardEntriesTests {
    private func open(_ directory: TemporaryDirectory, replica: Bool) throws -> Engine {
        var options = EngineOptions(durability: .none)
        if replica { options.leader = "/run/eddy/replication.sock" }
        return try Engine.open(directory: directory.path, options: options, logger: quietLogger)
    }

    @Test func aDeposedLeadersOwnEntriesAreUndoneExactly() async throws {
        let leaderDirectory = TemporaryDirectory("discard-leader")
        let deposedDirectory = TemporaryDirectory("discard-deposed")
        defer {
            leaderDirectory.remove()
            deposedDirectory.remove()
        }
        let rules = try JSONParser.parse(#"{"rules": {"m": {".indexOn": ["s", ".value"]}}}"#)
        let leader = try self.open(leaderDirectory, replica: false)
        defer { leader.close() }
        _ = try await leader.setRules(rules)
        _ = try await leader.set(p("/m/a"), try JSONParser.parse(#"{"s": 1, "deep": {"x": 1}}"#))
        _ = try await leader.set(p("/prim"), .number(5))
        _ = try await leader.push(p("/m"), try JSONParser.parse(#"{"s": 2}"#))
        let common = try leader.readLogEntries(after: nil, limit: 100)

        // The deposed node: a replica of the common history, then a leader that wrote more.
        do {
            let replica = try self.open(deposedDirectory, replica: true)
            _ = try await replica.applyReplicatedRules(rules)
            try await replica.waitForIndexes()
            try await replica.applyReplicated(common)
            replica.close()
        }
        do {
            let deposed = try self.open(deposedDirectory, replica: false)
            _ = try await deposed.set(p("/prim/child"), .string("replaces the primitive"))
            _ = try await deposed.update(
                p("/m"), [LogEntry.Change(path: p("a/s"), value: .number(9)), LogEntry.Change(path: p("b"), value: .object(["s": .number(3)]))])
            _ = try await deposed.remove(p("/m/a/deep"))
            _ = try await deposed.push(p("/m"), try JSONParser.parse(#"{"s": 0}"#))
            _ = try await deposed.set(p("/"), try JSONParser.parse(#"{"m": {"z": {"s": 7}}, "other": [1, 2]}"#))
            deposed.close()
        }

        let replica = try self.open(deposedDirectory, replica: true)
        defer { replica.close() }
        let own = try replica.readLogEntries(after: common.last!.id, limit: 100)
        #expect(own.count == 5)
        let lastCommon = common.last!.id
        await expectEddyError(.limitExceeded, mentioning: ["4", lastCommon.rawValue]) { _ = try await replica.discardEntries(after: lastCommon, countMax: 4) }
        #expect(try replica.readLogEntries(after: lastCommon, limit: 100) == own, "a refused discard changes nothing")

        // The caller keeps them first; when that fails, nothing is undone.
        await expectEddyError(.io, mentioning: ["side file"]) {
            _ = try await replica.discardEntries(after: lastCommon, countMax: 100) { _ throws(EddyError) in
                throw EddyError(.io, "side file full (test)")
            }
        }
        #expect(try replica.readLogEntries(after: lastCommon, limit: 100) == own, "a discard whose keep failed changes nothing")
        let kept = Mutex<[LogEntry]>([])
        let discarded = try await replica.discardEntries(after: lastCommon, countMax: 100) { entries in kept.withLock { $0 = entries } }
        #expect(discarded == own)
        #expect(kept.withLock { $0 } == own)
        #expect(try replica.lastLogID() == lastCommon)
        #expect(try replica.digest() == leader.digest(), "tree, indexes and log equal the new leader's at the common entry")
        #expect(try replica.verify().isHealthy)
        #expect(try await replica.discardEntries(after: lastCommon, countMax: 100).isEmpty)

        // The new leader's entries apply on top (their before-images match this replica's).
        _ = try await leader.set(p("/m/a/s"), .number(10))
        _ = try await leader.push(p("/m"), try JSONParser.parse(#"{"s": 4}"#))
        try await replica.applyReplicated(try leader.readLogEntries(after: lastCommon, limit: 100))
        #expect(try replica.digest() == leader.digest())

        await expectEddyError(.invalidArgument, mentioning: ["replica"]) { _ = try await leader.discardEntries(after: lastCommon, countMax: 100) }
    }
}
