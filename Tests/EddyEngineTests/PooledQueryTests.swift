// Indexed queries read the newest state through pooled iterators (`Database.makeCurrentIterator`).
// A child too large to be covered by its index entry is read from the tree at the index
// iterator's state; when the database changed before that tree read, the query is read again
// on a snapshot and answers exactly what a fresh query does.

@testable import EddyEngine
import EddyModel
import EddyStorage
import EddyTesting
import EddyTree
import Testing

@Suite struct PooledQueryTests {
    @Test func aQueryWhoseStateMovedBeforeItsTreeReadIsReadAgain() async throws {
        try await withEngine { engine in
            _ = try await engine.setRules(indexRules(["items": ["score"]]))
            // More leaves than an index entry covers: every child is read from the tree.
            let leaves = Value.object(Dictionary(uniqueKeysWithValues: (0...Limits.indexCoverLeavesMax).map { ("f\($0)", Value.number(Double($0))) }))
            for (key, score) in [("a", 3.0), ("b", 1.0), ("c", 2.0)] {
                var child = ["score": Value.number(score), "leaves": leaves]
                child["name"] = .string(key)
                _ = try await engine.set(p("/items/\(key)"), .object(child))
            }
            try await engine.waitForIndexes()
            let query = Query(order: .child(p("score")), limit: .first(2))
            let definition = try engine.index(for: p("/items"), query)
            let expected = try engine.readQueryJSON(p("/items"), query)

            var calls = 0
            let moved = try engine.readQueryJSON(p("/items"), query, definition: definition) {
                calls += 1
                // Any change moves the view; this one touches nothing the query reads.
                try? engine.database.put(engine.database.columnFamily(ColumnFamilies.meta), Array("test-key".utf8), [1], durability: .buffered)
            }
            #expect(calls == 1, "the pooled read reached the tree once, then the snapshot read took over")
            #expect(moved == expected)
            let selected = Value.object(["b": try engine.readValue(p("/items/b")), "c": try engine.readValue(p("/items/c"))])
            #expect(try JSONParser.parse(moved).normalized() == selected)

            var quietCalls = 0
            let quiet = try engine.readQueryJSON(p("/items"), query, definition: definition) { quietCalls += 1 }
            #expect(quietCalls == 1 && quiet == expected, "unchanged: the pooled read answers")
        }
    }
}
