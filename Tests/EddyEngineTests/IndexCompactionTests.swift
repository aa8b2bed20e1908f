// A finished index build is compacted in the background (Committer.settle): its entries leave
// level 0, where each file would be searched by every seek, and queries answer the same after.

import EddyEngine
import EddyModel
import EddyStorage
import EddyTesting
import EddyTree
import Foundation
import Testing

@Suite struct IndexCompactionTests {
    @Test func aFinishedBuildLeavesNoLevelZeroFile() async throws {
        var options = EngineOptions(durability: .none)
        options.indexBuildChunkChildren = 500
        let h = try IndexHarness(options: options)
        defer { h.close() }
        var posts: [String: Value] = [:]
        for i in 0..<5_000 { posts["p\(i)"] = .object(["score": .number(Double((i * 7919) % 1000)), "name": .string("post \(i)")]) }
        try await h.set("/", .object(["posts": .object(posts)]))
        try await h.setRules(["posts": ["score"]])
        try await h.engine.waitForIndexes()
        for _ in 0..<6000 where h.engine.indexCompactionsPending > 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(h.engine.indexCompactionsPending == 0, "the compaction after the build finished")
        try await self.expectSameWindows(h, "after the build's compaction")

        h.engine.close()
        let database = try Database(path: h.directory.path, columnFamilies: ColumnFamilies.all, options: StorageOptions())
        let index = database.columnFamily(ColumnFamilies.index)
        // Without the compaction, the flush at the build's end leaves its entries in level 0.
        #expect(database.property("rocksdb.num-files-at-level0", of: index) == "0")
        let files = (1...6).compactMap { Int(database.property("rocksdb.num-files-at-level\($0)", of: index) ?? "") }.reduce(0, +)
        #expect(files >= 1, "the entries are in a lower level")
        database.close()
        try h.reopen()
        try await self.expectSameWindows(h, "reopened")
    }

    /// equalTo, ranges with both limits, and the whole order, against the reference model.
    private func expectSameWindows(_ h: IndexHarness, _ context: String) async throws {
        let score = p("score")
        let queries = [
            Query(order: .child(score), start: at(.number(17)), end: at(.number(17))),
            Query(order: .child(score), start: at(.number(100)), end: at(.number(400)), limit: .first(50)),
            Query(order: .child(score), start: at(.number(100)), end: at(.number(400)), limit: .last(50)),
            Query(order: .child(score), limit: .last(3)),
            Query(order: .child(score)),
        ]
        for query in queries { try await h.expectSame(p("/posts"), query, context) }
    }
}
