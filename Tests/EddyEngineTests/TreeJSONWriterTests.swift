// JSON written straight from the tree (`TreeJSONWriter`, `KeyQueryReader.readJSON`) against the
// reference text: `JSONWriter` of the value read back. Byte for byte, over seeded random values
// and array-shaped ones (dense and sparse integer keys, holes, nested arrays, keys that look like
// indexes but are not), as whole subtrees (`getJSON` too, which checks the rules) and as
// key-ordered query windows (bounds, limitToFirst and limitToLast). A primitive with descendants in the tree is reported as corruption.
// Rerun a failure with `EDDY_SEED=<seed>`.

@testable import EddyEngine
import EddyModel
import EddyStorage
import EddyTesting
import EddyTree
import Testing

@Suite struct TreeJSONWriterTests {
    /// An object whose keys are mostly array indexes: dense or sparse, sometimes with one key
    /// that is not an index ("01", "-1", a letter, ten digits), children primitives or nested.
    static func arrayShaped(_ g: inout SeededGenerator, depth: Int) -> Value {
        var children: [String: Value] = [:]
        let span = g.int(in: 1...12)
        for index in 0..<span where g.chance(2, in: 3) || index == span - 1 {
            children[String(index)] =
                depth > 0 && g.chance(1, in: 3)
                ? (g.bool() ? Self.arrayShaped(&g, depth: depth - 1) : RandomValues.value(&g, depthMax: 2, widthMax: 3))
                : RandomValues.primitive(&g)
        }
        if g.chance(1, in: 5) { children[g.element(of: ["01", "-1", "a", "1000000000", "00"])] = RandomValues.primitive(&g) }
        return .object(children)
    }

    @Test func aSubtreeAndAKeyWindowWriteTheSameJSONAsTheirValue() async throws {
        let seed = SeededGenerator.seedFromEnvironment()
        print("TreeJSONWriterTests: EDDY_SEED=\(seed)")
        var g = SeededGenerator(seed: seed)
        try await withEngine { engine in
            let tree = engine.database.columnFamily(ColumnFamilies.tree)
            for n in 0..<400 {
                let value = n % 2 == 0 ? Self.arrayShaped(&g, depth: 2) : RandomValues.value(&g, depthMax: 4, widthMax: 5)
                let path = p("/v/\(n % 5)")
                _ = try await engine.set(path, value)
                for at in [path, p("/v"), p("/")] {
                    let stored = try engine.readValue(at)
                    var out: [UInt8] = []
                    try TreeJSONWriter.appendSubtree(engine.database.makeIterator(tree), prefix: PathKeyEncoding.encode(at), into: &out)
                    #expect(out == JSONWriter.bytes(stored), "seed \(seed) value \(n) at \(at): \(JSONWriter.string(stored))")
                    #expect(try await engine.getJSON(at, access: .admin) == out, "getJSON, seed \(seed) value \(n) at \(at)")
                }
                for _ in 0..<4 {
                    var query = Query(order: .key)
                    if g.chance(1, in: 2) { query.start = .init(value: .string(String(g.int(in: 0...12))), inclusive: g.bool()) }
                    if g.chance(1, in: 2) { query.end = .init(value: .string(g.element(of: ["3", "7", "11", "b", "01"])), inclusive: g.bool()) }
                    switch g.int(in: 0..<3) {
                    case 0: query.limit = .first(g.int(in: 1...6))
                    case 1: query.limit = .last(g.int(in: 1...6))
                    default: break
                    }
                    let expected = JSONWriter.bytes(try engine.readQuery(path, query))
                    let json = try engine.readQueryJSON(path, query)
                    #expect(
                        json == expected,
                        "seed \(seed) value \(n) query \(query): \(String(decoding: json, as: UTF8.self)) vs \(String(decoding: expected, as: UTF8.self))")
                }
            }
        }
    }

    @Test func getJSONChecksTheRules() async throws {
        try await withEngine { engine in
            _ = try await engine.setRules(json(#"{"rules": {"open": {".read": true}}}"#))
            _ = try await engine.set(p("/open/a"), .number(1))
            _ = try await engine.set(p("/closed/a"), .number(2))
            #expect(String(decoding: try await engine.getJSON(p("/open"), access: .unauthenticated), as: UTF8.self) == #"{"a":1}"#)
            await expectEddyError(.permissionDenied) { _ = try await engine.getJSON(p("/closed"), access: .unauthenticated) }
        }
    }

    @Test func aPrimitiveWithDescendantsIsCorruption() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/c"), json(#"{"a": 1, "b": {"x": 2}}"#))
            let tree = engine.database.columnFamily(ColumnFamilies.tree)
            // A leaf at /c/b beside its descendant /c/b/x, and one at /c itself.
            try engine.database.put(tree, PathKeyEncoding.encode(p("/c/b")), LeafEncoding.encode(.number(3)), durability: .buffered)
            for at in [p("/c"), p("/c/b")] {
                var out: [UInt8] = []
                #expect(throws: EddyError.self) {
                    try TreeJSONWriter.appendSubtree(engine.database.makeIterator(tree), prefix: PathKeyEncoding.encode(at), into: &out)
                }
            }
            try engine.database.put(tree, PathKeyEncoding.encode(p("/d")), LeafEncoding.encode(.number(1)), durability: .buffered)
            try engine.database.put(tree, PathKeyEncoding.encode(p("/d/e")), LeafEncoding.encode(.number(1)), durability: .buffered)
            var out: [UInt8] = []
            #expect(throws: EddyError.self) {
                try TreeJSONWriter.appendSubtree(engine.database.makeIterator(tree), prefix: PathKeyEncoding.encode(p("/d")), into: &out)
            }
        }
    }
}
