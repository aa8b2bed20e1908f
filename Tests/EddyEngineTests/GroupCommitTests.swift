// Group commit under concurrency with real fsyncs (`sync` durability), and the shutdown
// contract: after `close()` writes are refused with `shuttingDown`, and every write that was
// queued before `close()` is committed (an acknowledged write is on disk).

import EddyEngine
import EddyModel
import EddyTesting
import Testing

@Suite struct GroupCommitTests {
    @Test func concurrentPushersWithSyncDurability() async throws {
        let tasks = 64
        let pushesPerTask = 50
        let groups = Counter()
        try await withEngine(durability: .sync) { engine in
            engine.observeCommits { _ in groups.add(1) }
            let ids = try await withThrowingTaskGroup(of: [LogID].self) { group in
                for t in 0..<tasks {
                    group.addTask {
                        var ids: [LogID] = []
                        ids.reserveCapacity(pushesPerTask)
                        for i in 0..<pushesPerTask {
                            let committed = try await engine.push(p("/tasks/\(t)"), .object(["i": .number(Double(i))]))
                            ids.append(committed.logID)
                        }
                        return ids
                    }
                }
                var all: [LogID] = []
                for try await ids in group {
                    #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 }, "one task's writes commit in order")
                    all += ids
                }
                return all
            }
            #expect(ids.count == tasks * pushesPerTask)
            #expect(Set(ids).count == tasks * pushesPerTask, "every write has its own log id")
            #expect(try engine.logCount() == tasks * pushesPerTask)
            let report = try engine.verify()
            #expect(report.isHealthy, "\(report)")
            #expect(report.logEntryCount == tasks * pushesPerTask)
            #expect(report.leafCount == tasks * pushesPerTask)
            for t in [0, tasks / 2, tasks - 1] {
                let children = try await engine.getShallow(p("/tasks/\(t)"))
                guard case .object(let keys) = children else {
                    Issue.record("task \(t) wrote nothing: \(children)")
                    continue
                }
                #expect(keys.count == pushesPerTask)
            }
            let groupCount = groups.value
            #expect(groupCount >= 1)
            #expect(groupCount < tasks * pushesPerTask, "concurrent writes share fsyncs (\(groupCount) groups)")
        }
    }

    @Test func writesAfterCloseAreRefused() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
        _ = try await engine.set(p("/a"), .number(1))
        engine.close()
        engine.close()  // idempotent
        await expectEddyError(.shuttingDown, mentioning: ["shutting down"]) { _ = try await engine.set(p("/a"), .number(2)) }
        await expectEddyError(.shuttingDown) { _ = try await engine.push(p("/l"), .number(2)) }
        await expectEddyError(.shuttingDown) { _ = try await engine.update(p("/a"), [.init(path: p("b"), value: .number(1))]) }
        await expectEddyError(.shuttingDown) { _ = try await engine.remove(p("/a")) }
        await expectEddyError(.shuttingDown) { _ = try await engine.get(p("/a")) }
        // Validation still comes first: a bad write says what is wrong with it.
        await expectEddyError(.invalidValue) { _ = try await engine.set(p("/a"), .number(.nan)) }

        let reopened = try Engine.open(directory: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
        defer { reopened.close() }
        #expect(try await reopened.get(.root) == .object(["a": .number(1)]))
        #expect(try reopened.logCount() == 1)
    }

    @Test(arguments: [Durability.sync, .batched, .none])
    func closeDrainsQueuedWrites(_ durability: Durability) async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: durability), logger: quietLogger)
        let (commits, signal) = AsyncStream.makeStream(of: Void.self)
        engine.observeCommits { _ in signal.yield() }
        // Each writer writes until it is refused, so `close()` lands while writes are queued
        // and while new ones keep arriving.
        let writers = 32
        let results = await withTaskGroup(of: (acknowledged: [(String, LogID)], refused: [(String, EddyError)]).self) { group in
            for t in 0..<writers {
                group.addTask {
                    var acknowledged: [(String, LogID)] = []
                    for i in 0... {
                        let key = "\(t)-\(i)"
                        do throws(EddyError) {
                            let outcome = try await engine.set(p("/w/\(key)"), .string("value \(key)"))
                            acknowledged.append((key, outcome.committed!.logID))
                        } catch {
                            return (acknowledged, [(key, error)])
                        }
                    }
                    return (acknowledged, [])
                }
            }
            var groupsSeen = 0
            for await _ in commits {
                groupsSeen += 1
                if groupsSeen == 10 { break }
            }
            engine.close()
            signal.finish()
            var acknowledged: [(String, LogID)] = []
            var refused: [(String, EddyError)] = []
            for await result in group {
                acknowledged += result.acknowledged
                refused += result.refused
            }
            return (acknowledged: acknowledged, refused: refused)
        }
        #expect(results.refused.count == writers, "every writer ends with one refused write")
        for (key, error) in results.refused { #expect(error.code == .shuttingDown, "write \(key): \(error)") }
        #expect(results.acknowledged.count >= 10)

        let reopened = try Engine.open(directory: directory.path, options: EngineOptions(durability: durability), logger: quietLogger)
        defer { reopened.close() }
        let stored = try await reopened.get(p("/w"))
        for (key, _) in results.acknowledged {
            #expect(stored[key] == .string("value \(key)"), "acknowledged write \(key) (\(durability)) is present")
        }
        for (key, _) in results.refused {
            #expect(stored[key] == .null, "refused write \(key) was not applied")
        }
        #expect(stored.leafCount == results.acknowledged.count)
        #expect(try reopened.logCount() == results.acknowledged.count, "exactly the acknowledged writes were logged")
        #expect(
            Set(try reopened.readLogEntries(after: nil, limit: Limits.logReadCountMax).map(\.id))
                == Set(results.acknowledged.map(\.1)))
        let report = try reopened.verify()
        #expect(report.isHealthy, "\(report)")
    }

    @Test func batchedDurabilityCommitsAndSurvivesReopen() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var options = EngineOptions(durability: .batched)
        options.batchedSyncInterval = .milliseconds(5)
        let engine = try Engine.open(directory: directory.path, options: options, logger: quietLogger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<8 {
                group.addTask { for i in 0..<20 { _ = try await engine.set(p("/b/\(t)/\(i)"), .number(Double(i))) } }
            }
            try await group.waitForAll()
        }
        engine.close()
        let reopened = try Engine.open(directory: directory.path, options: options, logger: quietLogger)
        defer { reopened.close() }
        #expect(try reopened.logCount() == 160)
        #expect(try await reopened.get(p("/b/7/19")) == .number(19))
        #expect(try reopened.verify().isHealthy)
    }

    @Test func aFullQueueNeverLosesOrHalfAppliesAWrite() async throws {
        // Whatever the policy for a full queue (wait or refuse), every write either commits
        // or is refused with nothing applied.
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var options = EngineOptions(durability: .sync)
        options.commitQueueCountMax = 2
        options.commitGroupCountMax = 2
        let engine = try Engine.open(directory: directory.path, options: options, logger: quietLogger)
        defer { engine.close() }
        let results = await withTaskGroup(of: (Int, EddyError?).self) { group in
            for i in 0..<200 {
                group.addTask {
                    do throws(EddyError) {
                        _ = try await engine.set(p("/q/\(i)"), .number(Double(i)))
                        return (i, nil)
                    } catch {
                        return (i, error)
                    }
                }
            }
            var results: [Int: EddyError?] = [:]
            for await (i, error) in group { results[i] = error }
            return results
        }
        let stored = try await engine.get(p("/q"))
        var committed = 0
        for (i, error) in results {
            if let error {
                #expect(error.code == .busy, "write \(i): \(error)")
                #expect(error.message.contains("commitQueueCountMax"), "\(error.message)")
                #expect(stored[String(i)] == .null)
            } else {
                committed += 1
                #expect(stored[String(i)] == .number(Double(i)))
            }
        }
        #expect(committed >= 1)
        #expect(try engine.logCount() == committed)
        #expect(try engine.verify().isHealthy)
    }

    @Test func observersSeeEveryEntryOnceInLogOrder() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
        let observed = Observed()
        engine.observeCommits { entries in observed.append(entries) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<16 {
                group.addTask {
                    for i in 0..<10 {
                        _ = try await engine.set(p("/o/\(t)"), .number(Double(i)))
                        _ = try await engine.set(p("/o/\(t)"), .number(Double(i)), ifMatch: "never matches")  // not logged
                    }
                }
            }
            try await group.waitForAll()
        }
        let logged = try engine.readLogEntries(after: nil, limit: 1000)
        engine.close()  // observers of the last group have run once close returns
        let seen = observed.entries
        #expect(logged.count == 160)
        #expect(seen.map(\.id) == logged.map(\.id))
        #expect(seen == logged, "observers get the same entries the log holds")
    }

    @Test func smallGroupsAndQueueBoundsStillCommitEverything() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var options = EngineOptions(durability: .none)
        options.commitGroupCountMax = 1
        let engine = try Engine.open(directory: directory.path, options: options, logger: quietLogger)
        defer { engine.close() }
        let groups = Counter()
        let largest = Counter()
        engine.observeCommits { entries in
            groups.add(1)
            largest.raise(to: entries.count)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<10 {
                group.addTask { for i in 0..<10 { _ = try await engine.push(p("/q/\(t)"), .number(Double(i))) } }
            }
            try await group.waitForAll()
        }
        #expect(groups.value == 100)
        #expect(largest.value == 1, "commitGroupCountMax = 1 gives one write per group")
        #expect(try engine.logCount() == 100)
    }
}
