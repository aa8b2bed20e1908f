// Key-ordered queries against a slow reference: sort every child by Firebase key order and
// filter. Seeded (EDDY_SEED), the seed is in every expectation's comment.

import EddyEngine
import EddyModel
import EddyTesting
import Testing

@Suite struct KeyQueryTests {
    static let keys = [
        "-1", "0", "1", "01", "001", "2", "10", "2147483647", "2147483648", "-", "A", "a", "ab", "b", "é", "😀",
        "\u{FF61}", "z",
    ]

    /// The reference: all children in Firebase key order, filtered by the bounds and limit.
    static func expected(_ object: [String: Value], _ query: Query) -> Value {
        var keys = object.keys.sorted(by: Key.lessThan)
        if let start = query.start, case .string(let s) = start.value {
            keys = keys.filter { start.inclusive ? Key.compare($0, s) >= 0 : Key.compare($0, s) > 0 }
        }
        if let end = query.end, case .string(let e) = end.value {
            keys = keys.filter { end.inclusive ? Key.compare($0, e) <= 0 : Key.compare($0, e) < 0 }
        }
        switch query.limit {
        case .first(let n): keys = Array(keys.prefix(n))
        case .last(let n): keys = Array(keys.suffix(n))
        case nil: break
        }
        var out: [String: Value] = [:]
        for key in keys { out[key] = object[key] }
        return out.isEmpty ? .null : .object(out)
    }

    @Test func randomWindowsMatchTheReference() async throws {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        try await withEngine { engine in
            var object: [String: Value] = [:]
            for key in Self.keys where g.bool() {
                // Children are primitives or small objects, so subtrees must be skipped whole.
                object[key] = g.bool() ? .number(Double(g.int(in: 0..<100))) : .object(["x": .string(key), "y": .bool(true)])
            }
            _ = try await engine.set(p("/list"), .object(object))
            // Bounds also include strings no key can equal (forbidden bytes, empty): they must
            // still fall between the right children.
            let bounds = Self.keys + ["", "a\u{0}", "a\u{0}b", "1\u{0}", "\u{0}", "a.b", "a\u{7F}", "a\u{1F}", "0\u{1}", "é\u{0}"]
            for _ in 0..<400 {
                let bound = { (g: inout SeededGenerator) -> Query.Bound? in
                    g.int(in: 0..<3) == 0 ? nil : Query.Bound(value: .string(g.element(of: bounds)), inclusive: g.bool())
                }
                let limit: Query.Limit? = [nil, .first(g.int(in: 1..<5)), .last(g.int(in: 1..<5))][g.int(in: 0..<3)]
                let query = Query(order: .key, start: bound(&g), end: bound(&g), limit: limit)
                let got = try await engine.query(p("/list"), query)
                #expect(got == Self.expected(object, query), Comment("seed \(seed): \(query)"))
            }
        }
    }

    @Test func queriesOnPrimitivesMissingLocationsAndTheRoot() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/leaf"), .number(3))
            _ = try await engine.set(p("/obj/a"), .number(1))
            #expect(try await engine.query(p("/leaf"), Query(order: .key)) == .null)
            #expect(try await engine.query(p("/missing"), Query(order: .key)) == .null)
            #expect(try await engine.query(p("/leaf/below"), Query(order: .key)) == .null)
            #expect(
                try await engine.query(.root, Query(order: .key, limit: .last(1))) == .object(["obj": .object(["a": .number(1)])]))
            #expect(
                try await engine.query(.root, Query(order: .key, limit: .first(1))) == .object(["leaf": .number(3)]))
        }
    }

    @Test func otherOrdersNeedAnIndex() async throws {
        try await withEngine { engine in
            do {
                _ = try await engine.query(p("/users"), Query(order: .child(p("age"))))
                Issue.record("an unindexed child query was answered")
            } catch let error as EddyError {
                #expect(error.message == #"Index not defined, add ".indexOn": "age", for path "/users", to the rules"#)
            } catch {
                Issue.record("unexpected \(error)")
            }
            do {
                _ = try await engine.query(p("/users"), Query(order: .value))
                Issue.record("an unindexed value query was answered")
            } catch let error as EddyError {
                #expect(error.message.contains(#"".indexOn": ".value""#))
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }
}

@Suite struct RulesStorageTests {
    @Test func rulesAndTheirIndexesPersistAcrossReopen() async throws {
        let directory = TemporaryDirectory(#function)
        defer { directory.remove() }
        let document = try JSONParser.parse(#"{"rules": {"users": {".indexOn": "age"}}}"#)
        do {
            let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
            #expect(try engine.rules() == Rules.default)
            _ = try await engine.setRules(document)
            await #expect(throws: EddyError.self) { try await engine.setRules(.object(["nope": .bool(true)])) }
            engine.close()
        }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { engine.close() }
        #expect(try engine.rules().json == document)
        try await engine.waitForIndexes()
        #expect(engine.indexStatus().map(\.on) == ["age"])
        #expect(try await engine.query(p("/users"), Query(order: .child(p("age")))) == .null)
    }
}
