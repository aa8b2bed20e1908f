// `OnDisconnectList`: the per-connection bounds, cancel by location, and the daemon-wide byte
// budget that every list's writes hold until they are cancelled or taken to run.

import EddyModel
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
        #expect(first.cancel(namespace: "default", at: try Path("/a"), budget: budget) == 1)
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
        #expect(list.cancel(namespace: "default", at: try Path("/p/a"), budget: budget) == 1)
        #expect(list.writes.map { "\($0.namespace)\($0.operation.location)" } == ["default/p", "default/q/a", "other/p/a"])
        #expect(list.cancel(namespace: "default", at: try Path("/"), budget: budget) == 2)
        #expect(list.writes.count == 1 && budget.usedBytes == list.bytes)
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
}
