// An online build's entries written straight from the tree (`IndexChildScan.nextEntry`, the
// covered JSON by `TreeJSONWriter`, the sort value caught among the leaves) against the entries
// of the same children read as `Value`s (`IndexDefinition.entry(next())`, what writes and
// verify() use): byte for byte, key and value, over seeded random children (primitives,
// objects, array-shaped ones, children past the cover limits of 256 leaves and 4 KiB) and
// declarations on a child, a nested child, an array index and the value, at a literal location
// and under a wildcard. Rerun a failure with `EDDY_SEED=<seed>`.

@testable import EddyEngine
import EddyIndexes
import EddyModel
import EddyStorage
import EddyTesting
import EddyTree
import Testing

@Suite struct IndexChildScanEntryTests {
    static func definition(location: String, on: String) throws -> IndexDefinition {
        var rules: [String: Value] = [".indexOn": .string(on)]
        for segment in location.split(separator: "/").reversed() { rules = [String(segment): .object(rules)] }
        let declarations = try Rules.parse(.object(["rules": .object(rules)])).indexes
        return IndexDefinition(
            id: 7, declaration: declarations[0], state: .building(resumeKey: []), indexedCount: 0, createdMilliseconds: 0,
            readyMilliseconds: nil)
    }

    /// A child for the scan: usually small with an `a` (sometimes nested, sometimes an
    /// object) among other keys; sometimes a primitive, array-shaped, or past a cover limit.
    static func child(_ g: inout SeededGenerator) -> Value {
        switch g.int(in: 0..<10) {
        case 0: return RandomValues.primitive(&g)
        case 1: return TreeJSONWriterTests.arrayShaped(&g, depth: 2)
        case 2:
            // At or past a cover limit, the sort child last in key order: 254-256 other
            // leaves beside "a" and "zz", or a JSON text of 4,094-4,098 bytes
            // (`{"a":1,"k":"` 12, the string, `","zz":2}` 9).
            var children: [String: Value] = ["a": .number(1), "zz": .number(2)]
            if g.bool() {
                for i in 0..<g.int(in: 254...256) { children["k\(i)"] = .number(Double(i)) }
            } else {
                children["k"] = .string(String(repeating: "x", count: g.int(in: 4073...4077)))
            }
            return .object(children)
        default:
            var children: [String: Value] = [:]
            for _ in 0..<g.int(in: 0...4) { children[RandomValues.key(&g)] = RandomValues.value(&g, depthMax: 2, widthMax: 3) }
            switch g.int(in: 0..<4) {
            case 0: children["a"] = RandomValues.primitive(&g)
            case 1: children["a"] = .object(["b": RandomValues.primitive(&g), "c": .number(1)])
            case 2: children["a"] = RandomValues.value(&g, depthMax: 2, widthMax: 3)
            default: break
            }
            return children.isEmpty ? RandomValues.primitive(&g) : .object(children)
        }
    }

    @Test func entriesFromTheLeavesAreTheEntriesOfTheValues() async throws {
        let seed = SeededGenerator.seedFromEnvironment()
        print("IndexChildScanEntryTests: EDDY_SEED=\(seed)")
        var g = SeededGenerator(seed: seed)
        try await withEngine { engine in
            for n in 0..<60 {
                _ = try await engine.set(p("/v/\(n % 3)/c\(n)"), Self.child(&g))
                _ = try await engine.set(p("/w/c\(n)"), Self.child(&g))
            }
            let tree = engine.database.columnFamily(ColumnFamilies.tree)
            let declarations = [
                ("w", "a"), ("w", "a/b"), ("w", "0"), ("w", ".value"), ("w", "zz"),
                ("v/$g", "a"), ("v/$g", ".value"), ("v/1", "a/b"),
            ]
            var compared = 0
            for (location, on) in declarations {
                let definition = try Self.definition(location: location, on: on)
                var byValue = IndexChildScan(definition: definition, tree: engine.database.makeIterator(tree), from: nil)
                var byLeaves = IndexChildScan(definition: definition, tree: engine.database.makeIterator(tree), from: nil)
                while true {
                    let expected = try byValue.next().map(definition.entry)
                    let entry = try byLeaves.nextEntry()
                    #expect(entry?.key == expected?.key, "seed \(seed) \(location) on \(on): key")
                    #expect(entry?.value == expected?.value, "seed \(seed) \(location) on \(on): value")
                    #expect(byLeaves.resumeKey == byValue.resumeKey, "seed \(seed) \(location) on \(on): resume key")
                    guard expected != nil, entry != nil else { break }
                    compared += 1
                }
            }
            #expect(compared >= 300)
        }
    }
}
