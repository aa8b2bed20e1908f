// Index entry changes still pending when a commit group ends are written through a plain copy
// of the group's batch (`WriteBatch(copying:)`, `IndexMaintainer.flushPending(into:)`), after
// any that a live-event window's refill added to the batch itself earlier in the group. Both
// orders of the same key (put in the batch, delete pending, and the reverse) must leave what
// the last write meant: the index is checked against the tree (`verify`), against a fresh
// query, and against the window the listener was told about.
//
// Rerun a failure with `EDDY_SEED=<seed>`.

import EddyEngine
import EddyEvents
import EddyModel
import EddyTesting
import Synchronization
import Testing

@Suite struct IndexGroupEndTests {
    @Test func concurrentWritesThatMoveChildrenThroughALimitedWindowLeaveTheIndexExact() async throws {
        let seed = SeededGenerator.seedFromEnvironment()
        print("IndexGroupEndTests: EDDY_SEED=\(seed)")
        try await withEngine(durability: .sync) { engine in
            _ = try await engine.setRules(json(#"{"rules": {"m": {".indexOn": "s"}}}"#))
            try await engine.waitForIndexes()
            let children = 24
            for i in 0..<children { _ = try await engine.set(p("/m/c\(i)"), json(#"{"s": \#(i), "t": "x"}"#)) }
            let groups = Mutex(0)
            engine.observeCommits { _ in groups.withLock { $0 += 1 } }
            // A small window low in the order: most writes move a child into or out of it, and
            // each removal from it is a refill, which reads the index through the batch.
            let query = Query(order: .child(p("s")), limit: .first(3))
            let batches = ReceivedBatches()
            _ = try await engine.listen(p("/m"), query: query, sink: batches.sink)
            let tasks = 8
            let writesPerTask = 40
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<tasks {
                    var g = SeededGenerator(seed: seed &+ UInt64(task))
                    let steps: [(path: Path, value: Value)] = (0..<writesPerTask).map { _ in
                        let child = p("/m/c\(Int.random(in: 0..<children, using: &g))")
                        switch Int.random(in: 0..<6, using: &g) {
                        case 0: return (child, .null)  // removed (and maybe added back later)
                        case 1: return (child.appending("s"), .null)  // sorts first (null)
                        default: return (child.appending("s"), .number(Double(Int.random(in: -4..<30, using: &g))))
                        }
                    }
                    group.addTask {
                        for step in steps { _ = try await engine.set(step.path, step.value) }
                    }
                }
                try await group.waitForAll()
            }
            let groupCount = groups.withLock { $0 }
            #expect(groupCount < tasks * writesPerTask, "seed \(seed): writes shared groups (\(groupCount) groups)")
            let report = try engine.verify()
            #expect(report.isHealthy, "seed \(seed): \(report)")
            #expect(report.indexCount == 1)
            guard case .object(let all) = try await engine.get(p("/m")) else {
                Issue.record("seed \(seed): /m is gone")
                return
            }
            var selected: [String: Value] = [:]
            for key in ReferenceModel.select(all, query) { selected[key] = all[key] }
            let expected: Value = selected.isEmpty ? .null : .object(selected)
            #expect(try engine.readQuery(p("/m"), query) == expected, "seed \(seed): the index answers as the tree")
            let lastValue = batches.take().last { $0.last?.kind == .value }?.last?.value
            #expect(lastValue == expected, "seed \(seed): the window the listener was last told")
        }
    }
}
