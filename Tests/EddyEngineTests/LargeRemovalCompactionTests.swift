// A write that deletes at least `TreeWriter.largeRemovalLeaves` leaves has its range compacted
// in the background once committed, so its tombstones (in the tree family's memtable first) do
// not make every later seek near the location walk them; a smaller removal is left to ordinary
// flushes and compactions.

@testable import EddyEngine
import EddyModel
import EddyStorage
import EddyTree
import Foundation
import Testing

struct LargeRemovalCompactionTests {
    private func deletesInMemtable(_ engine: Engine) -> Int? {
        let tree = engine.database.columnFamily(ColumnFamilies.tree)
        return engine.database.property("rocksdb.num-deletes-active-mem-table", of: tree).flatMap { Int($0) }
    }

    private func settle(_ engine: Engine) async throws {
        for _ in 0..<2000 where engine.database.backgroundCompactionsPending > 0 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(engine.database.backgroundCompactionsPending == 0)
    }

    private func children(_ count: Int) -> Value {
        .object(Dictionary(uniqueKeysWithValues: (0..<count).map { ("c\($0)", Value.number(Double($0))) }))
    }

    @Test func aLargeRemovalIsCompactedAway() async throws {
        try await withEngine { engine in
            let leaves = TreeWriter.largeRemovalLeaves + 500
            _ = try await engine.set(p("/big"), self.children(leaves))
            _ = try await engine.set(p("/big/c7"), .string("changed before the removal"))
            _ = try await engine.remove(p("/big"))
            try await self.settle(engine)
            #expect(self.deletesInMemtable(engine) == 0, "the tombstones were flushed and compacted away")
            #expect(try engine.readValue(p("/big")) == .null)
            _ = try await engine.set(p("/big/again"), .number(1))
            #expect(try engine.readValue(p("/big")) == .object(["again": .number(1)]))
        }
    }

    @Test func aSmallRemovalIsLeftToOrdinaryCompaction() async throws {
        try await withEngine { engine in
            let leaves = TreeWriter.largeRemovalLeaves / 2
            _ = try await engine.set(p("/small"), self.children(leaves))
            _ = try await engine.remove(p("/small"))
            try await self.settle(engine)
            #expect(self.deletesInMemtable(engine) == leaves)
            #expect(try engine.readValue(p("/small")) == .null)
        }
    }
}
