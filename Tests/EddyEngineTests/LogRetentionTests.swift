// Log retention and snapshots at the engine: pruning by age keeps the newest entry and what a
// follower still needs, records how far it pruned, refuses resumes from before that, and
// `verify` checks a pruned log backwards; a snapshot restored elsewhere is the same database
// (digests equal) and says which database it replicates; a snapshot whose records of a family
// are out of key order is refused.

import EddyEngine
import EddyModel
import EddyStorage
import EddyTesting
import Foundation
import Testing

@Suite struct LogRetentionTests {
    @Test func theSmallestIDOfATimestampSortsBeforeEveryIDOfIt() {
        let id = LogID.first(atMilliseconds: 1_700_000_000_123)
        #expect(id.timestampMilliseconds == 1_700_000_000_123)
        var generator = PushIDGenerator()
        let generated = generator.next(nowMilliseconds: 1_700_000_000_123)
        #expect(!(generated < id))
        #expect(LogID.first(atMilliseconds: 1_700_000_000_122) < generated)
    }

    @Test func pruningByAgeKeepsTheNewestAndWhatAFollowerNeeds() async throws {
        let clock = ManualClock()
        try await withEngine(clock: clock) { engine in
            var ids: [LogID] = []
            for i in 0..<10 {
                ids.append(try await engine.set(p("/a/k\(i % 3)"), .number(Double(i))).committed!.logID)
                clock.advance(by: 1000)
            }
            var retention = LogRetention()
            retention.retainSeconds = 4.5
            let now = clock.nowMilliseconds()
            // A follower still at entry 2 keeps everything from it.
            #expect(try engine.pruneLog(retention, keep: ids[2], nowMilliseconds: now) == ids[1])
            #expect(try engine.firstLogID() == ids[2])
            #expect(try engine.logPrunedThrough() == ids[1])
            // Without it, entries older than 4.5 s go (entry i was written at i s; now is 10 s).
            #expect(try engine.pruneLog(retention, keep: nil, nowMilliseconds: now) == ids[5])
            #expect(try engine.firstLogID() == ids[6])
            #expect(try engine.canResume(after: ids[5]) && engine.canResume(after: ids[7]))
            #expect(try !engine.canResume(after: ids[4]))
            await expectEddyError(.notFound, mentioning: ["pruned through \(ids[5])"]) {
                _ = try await engine.listen(p("/a"), since: ids[4], sink: { _ in })
            }
            // Never the newest entry, whatever the policy says.
            retention.retainSeconds = 0
            #expect(try engine.pruneLog(retention, keep: nil, nowMilliseconds: now + 100_000) == ids[8])
            #expect(try engine.firstLogID() == ids[9])
            #expect(try engine.verify().isHealthy, "verify checks a pruned log backwards")
        }
    }

    @Test func verifyNoticesAPrunedLogThatDisagreesWithTheTree() async throws {
        let clock = ManualClock()
        let directory = TemporaryDirectory("pruned-verify")
        defer { directory.remove() }
        do {
            let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), clock: clock, logger: quietLogger)
            for i in 0..<4 {
                _ = try await engine.set(p("/x"), .number(Double(i)))
                clock.advance(by: 1000)
            }
            var retention = LogRetention()
            retention.retainSeconds = 2.5
            _ = try engine.pruneLog(retention, keep: nil, nowMilliseconds: clock.nowMilliseconds())
            #expect(try engine.verify().isHealthy)
            engine.close()
        }
        // Change the tree behind the log's back: the newest entry set /x to 3.
        let report = try VerifyTests.verifyAfterDamage(directory) { database, tree, _ in
            try database.put(tree, PathKeyEncoding.encode(p("/x")), LeafEncoding.encode(.number(7)), durability: .sync)
        }
        #expect(report.problem?.contains("tree and log disagree") == true, "\(report)")
    }

    @Test func aRestoredSnapshotIsTheSameDatabase() async throws {
        let target = TemporaryDirectory("snapshot-target")
        defer { target.remove() }
        try await withEngine { engine in
            _ = try await engine.setRules(try JSONParser.parse(#"{"rules": {"m": {".indexOn": "s"}}}"#))
            try await engine.waitForIndexes()
            for i in 0..<300 { _ = try await engine.push(p("/m"), .object(["s": .number(Double(i % 17))])) }
            let reader = try engine.makeSnapshotReader()
            #expect(reader.at == (try engine.lastLogID()))
            _ = try await engine.set(p("/after"), .bool(true))  // not in the snapshot
            var chunks = 0
            let count = try Engine.restoreSnapshot(directory: target.path, replicaOf: engine.databaseID) { () throws(EddyError) in
                let records = try reader.next(bytesMax: 4096)
                if records.isEmpty { return nil }
                chunks += 1
                return records
            }
            #expect(chunks > 1 && count > 600)
            var options = EngineOptions(durability: .none)
            options.leader = "leader.sock"
            let restored = try Engine.open(directory: target.path, options: options, logger: quietLogger)
            defer { restored.close() }
            #expect(try restored.replicaOf() == engine.databaseID)
            #expect(try restored.lastLogID() == reader.at)
            #expect(try restored.verify().isHealthy)
            _ = try await engine.remove(p("/after"))
            #expect(try restored.digest()["tree"] == engine.digest()["tree"])
            #expect(try restored.digest()["index"] == engine.digest()["index"])
        }
    }

    @Test func aSnapshotWithRecordsOutOfKeyOrderIsRefused() throws {
        let target = TemporaryDirectory("snapshot-disorder")
        defer { target.remove() }
        let restore = try SnapshotRestore(directory: target.path)
        func put(_ family: UInt8, _ key: String) throws(EddyError) {
            try restore.put(EngineSnapshotReader.Record(family: family, key: Array(key.utf8), value: Array("v".utf8)))
        }
        try put(0, "b")
        try put(2, "a")  // another family starts its own order
        #expect(restore.count == 2)
        do {
            try put(0, "a")
            Issue.record("a key before the family's previous one was accepted")
        } catch {
            #expect(error.message.contains("writing a snapshot into"), "\(error.message)")
        }
        do {
            try put(7, "z")
            Issue.record("a record of a family that does not exist was accepted")
        } catch {
            #expect(error.code == .corruption && error.message.contains("family 7"), "\(error.message)")
        }
    }
}

