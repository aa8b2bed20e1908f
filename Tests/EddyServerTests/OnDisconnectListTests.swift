// `OnDisconnectList`: the per-connection bounds, cancel by location, and the daemon-wide byte
// budget that every list's writes hold until they are cancelled or taken to run.

import EddyModel
import EddyTesting
import Testing

@testable import EddyEngine
@testable import EddyServer

struct OnDisconnectListTests {
    private func write(_ path: String, _ value: Value, namespace: String = "default") throws -> OnDisconnectWrite {
        try OnDisconnectList.write(.set(try Path(path), value), namespace: namespace, access: .admin)
    }

    @Test func writesHoldTheSharedBudgetUntilCancelledOrTaken() throws {
        let budget = MemoryBudget(bytesMax: 1000)
        var first = OnDisconnectList()
        var second = OnDisconnectList()
        let big = try self.write("/a/big", .string(String(repeating: "x", count: 400)))
        try first.append(big, budget: budget)
        try second.append(try self.write("/b/big", .string(String(repeating: "y", count: 400))), budget: budget)
        #expect(budget.usedBytes == first.bytes + second.bytes && budget.usedBytes > 800)
        // A third large write fits its list's own bound but not the shared one: refused, nothing held.
        let held = budget.usedBytes
        #expect(throws: EddyError.self) { try first.append(try self.write("/a/more", .string(String(repeating: "z", count: 400))), budget: budget) }
        #expect(budget.usedBytes == held && first.writes.count == 1)
        do {
            try second.append(try self.write("/b/more", .string(String(repeating: "z", count: 400))), budget: budget)
            Issue.record("the shared budget should refuse it")
        } catch let error as EddyError {
            #expect(error.code == .busy && error.message.contains("onDisconnectBytesTotal"))
        }
        // A cancel gives its bytes back; so does taking the writes to run them.
        #expect(try first.cancel(namespace: "default", at: try Path("/a"), budget: budget) == 1)
        #expect(budget.usedBytes == second.bytes && first.bytes == 0)
        #expect(second.takeAll(budget: budget).count == 1)
        #expect(budget.usedBytes == 0 && second.writes.isEmpty)
    }

    @Test func cancelDropsOnlyTheNamespacesWritesAtOrBelowThePath() throws {
        let budget = MemoryBudget(bytesMax: 1 << 20)
        var list = OnDisconnectList()
        for (path, namespace) in [("/p/a", "default"), ("/p", "default"), ("/q/a", "default"), ("/p/a", "other")] {
            try list.append(try self.write(path, .bool(true), namespace: namespace), budget: budget)
        }
        // The write at /p is above /p/a: the list keeps everything and a cancel step that
        // forgets /p/a when the writes are replayed; the write there counts as cancelled.
        #expect(try list.cancel(namespace: "default", at: try Path("/p/a"), budget: budget) == 1)
        #expect(
            list.writes.map(Self.describe) == ["default set /p/a", "default set /p", "default set /q/a", "other set /p/a", "default cancel /p/a"])
        #expect(budget.usedBytes == list.bytes)
        // Nothing above /q/a: the write there goes, and no step is kept.
        #expect(try list.cancel(namespace: "default", at: try Path("/q/a"), budget: budget) == 1)
        #expect(list.writes.map(Self.describe) == ["default set /p/a", "default set /p", "other set /p/a", "default cancel /p/a"])
        #expect(try list.cancel(namespace: "default", at: try Path("/"), budget: budget) == 2)
        #expect(list.writes.map(Self.describe) == ["other set /p/a"] && budget.usedBytes == list.bytes)
    }

    private static func describe(_ write: OnDisconnectWrite) -> String {
        switch write.step {
        case .write(let operation): return "\(write.namespace) set \(operation.location)"
        case .cancel(let location): return "\(write.namespace) cancel \(location)"
        }
    }

    /// A connection's writes replay into Firebase's tree and run as one write: a set, an update
    /// (a set per child) and a remove below it, then a cancel inside the update.
    @Test func writesReplayIntoOneWrite() throws {
        let budget = MemoryBudget(bytesMax: 1 << 20)
        var list = OnDisconnectList()
        let foo = try Path("/foo")
        for operation in [
            WriteOperation.set(foo, .object(["bar": .string("a"), "baz": .string("b")])),
            try WriteOperation.update(at: foo, body: .object(["bam": .string("c"), "bat": .string("d")])),
            WriteOperation.remove(try Path("/foo/baz")),
            WriteOperation.set(try Path("/elsewhere"), .number(1)),
        ] {
            try list.append(try OnDisconnectList.write(operation, namespace: "default", access: .admin), budget: budget)
        }
        #expect(try list.cancel(namespace: "default", at: try Path("/foo/bat"), budget: budget) == 0)
        let (tree, access) = try #require(OnDisconnectRuns.replayed(list.takeAll(budget: budget)))
        #expect(access.isAdmin)
        let parts = tree.writes()
        // The update and the remove changed the value set at /foo; the cancel split it into its
        // children and forgot bat, so /foo is no longer replaced whole (as in Firebase).
        #expect(parts.map { "\($0.path)=\(JSONWriter.string($0.value))" } == ["/elsewhere=1", "/foo/bam=\"c\"", "/foo/bar=\"a\""])
        guard case .update(let location, let changes) = try #require(OnDisconnectRuns.oneWrite(parts)) else {
            Issue.record("several parts make one update")
            return
        }
        #expect(location.isRoot && changes.count == 3)
        #expect(OnDisconnectRuns.oneWrite([]) == nil)
        guard case .set(let path, _) = try #require(OnDisconnectRuns.oneWrite([parts[0]])) else {
            Issue.record("one part is a set")
            return
        }
        #expect(path.description == "/elsewhere")
    }

    /// Writes registered under different identities are not merged (each runs with its own).
    @Test func differentIdentitiesAreNotReplayedTogether() throws {
        let first = try OnDisconnectList.write(.set(try Path("/a"), .number(1)), namespace: "default", access: .admin)
        let second = try OnDisconnectList.write(.set(try Path("/b"), .number(2)), namespace: "default", access: .unauthenticated)
        #expect(OnDisconnectRuns.replayed([first, second]) == nil)
        #expect(OnDisconnectRuns.replayed([first, first]) != nil)
    }

    @Test func aConnectionHoldsAtMostCountMaxWrites() throws {
        let budget = MemoryBudget(bytesMax: 1 << 30)
        var list = OnDisconnectList()
        for i in 0..<OnDisconnectList.countMax { try list.append(try self.write("/n/\(i)", .number(Double(i))), budget: budget) }
        do {
            try list.append(try self.write("/n/x", .number(1)), budget: budget)
            Issue.record("the count bound should refuse it")
        } catch let error as EddyError {
            #expect(error.code == .limitExceeded && error.message.contains("onDisconnectCountMax"))
        }
        #expect(list.writes.count == OnDisconnectList.countMax && budget.usedBytes == list.bytes)
    }

    /// Model-based: random sets, updates, removes and cancels registered on a list and replayed
    /// (what eddyd makes when the connection ends) give the tree Firebase's client keeps for the
    /// same calls (remember and forget in order). Prints its seed (`EDDY_SEED` reruns it).
    @Test func theListReplaysAsFirebasesTreeOfTheSameCalls() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        print("OnDisconnectListTests seed \(seed) (rerun with EDDY_SEED=\(seed))")
        var rng = SeededGenerator(seed: seed)
        let keys = ["a", "b", "c"]
        func path() -> Path { Path(validatedKeys: (0..<rng.int(in: 1...3)).map { _ in rng.element(of: keys) }) }
        func value(_ depth: Int = 0) -> Value {
            if depth < 2, rng.chance(1, in: 3) {
                return .object(Dictionary(uniqueKeysWithValues: keys.filter { _ in rng.bool() }.map { ($0, value(depth + 1)) })).normalized()
            }
            return .number(Double(rng.int(in: 0..<10)))
        }
        for round in 0..<5000 {
            let budget = MemoryBudget(bytesMax: 1 << 20)
            var list = OnDisconnectList()
            var model = SparseWriteTree()
            var calls: [String] = []
            for _ in 0..<rng.int(in: 1...8) {
                let at = path()
                switch rng.int(in: 0..<4) {
                case 0:
                    let v = value()
                    try list.append(try OnDisconnectList.write(.set(at, v), namespace: "default", access: .admin), budget: budget)
                    model.remember(v, at: at)
                    calls.append("set \(at) \(JSONWriter.string(v))")
                case 1:
                    let members = Dictionary(uniqueKeysWithValues: keys.filter { _ in rng.bool() }.map { ($0, value(1)) })
                    guard !members.isEmpty else { continue }
                    let operation = try WriteOperation.update(at: at, body: .object(members))
                    try list.append(try OnDisconnectList.write(operation, namespace: "default", access: .admin), budget: budget)
                    for (key, v) in members { model.remember(v.normalized(), at: at.appending(key)) }
                    calls.append("update \(at) \(JSONWriter.string(.object(members)))")
                case 2:
                    try list.append(try OnDisconnectList.write(.remove(at), namespace: "default", access: .admin), budget: budget)
                    model.remember(.null, at: at)
                    calls.append("remove \(at)")
                default:
                    _ = try list.cancel(namespace: "default", at: at, budget: budget)
                    model.forget(at)
                    calls.append("cancel \(at)")
                }
            }
            let replayed = OnDisconnectRuns.replayed(list.takeAll(budget: budget))?.0 ?? SparseWriteTree()
            let got = replayed.writes().map { "\($0.path)=\(JSONWriter.string($0.value))" }
            let expected = model.writes().map { "\($0.path)=\(JSONWriter.string($0.value))" }
            #expect(got == expected, "seed \(seed) round \(round): \(calls)")
            #expect(budget.usedBytes == 0)
        }
    }
}
