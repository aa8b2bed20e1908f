// Model-based test of ordered queries: seeded random data under indexed locations (one behind
// a `$uid` wildcard), seeded random writes of every kind (set at every depth, multi-location
// updates, push, remove, server values, primitives replaced by objects and back, whole lists
// and the root replaced, restarts), and after every write random queries (key, value and child
// orders incl. a nested path, random bounds with and without a key tie-break drawn partly
// from the data, random limits) against the engine and against `ReferenceModel.query`. Every
// result must be identical; `verify()` must be healthy at the end.
//
// Variants: indexes declared before loading, declared after loading (an online build), and
// rules changing mid-run (indexes dropped, then declared again).
// Rerun a failure with `EDDY_SEED=<seed>`; `EDDY_EVENTS_MAX` sets the number of writes.

import EddyEngine
import EddyModel
import EddyTesting
import Testing

@Suite struct QueryModelBasedTests {
    enum Variant: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case indexesBeforeLoading
        case indexesAfterLoading
        case rulesChangeMidRun

        var testDescription: String { self.rawValue }
    }

    static let declarations: [String: [String]] = [
        "posts": ["score", "metrics/views", ".value"],
        "scores": [".value"],
        "user-posts/$uid": ["stars", "meta/rank", ".value"],
        // An index inside the children of another one: a message write touches both.
        "rooms": ["title", "stars"],
        "rooms/$room/messages": ["score", "meta/rank"],
    ]
    static let uids = ["u1", "u2", "0", "\u{1F600}"]
    static let rooms = ["r1", "r2", "1"]
    /// Fields of an item that writes target; "metrics" and "meta" are parents of indexed paths.
    static let fields = ["score", "metrics/views", "metrics", "stars", "meta/rank", "meta", "title"]

    struct Run {
        var g: SeededGenerator
        let keys: [String]

        mutating func key() -> String {
            g.chance(1, in: 15) ? RandomValues.key(&g) : g.element(of: self.keys)
        }

        /// A sort value from a small pool, so values tie and bounds hit them; sometimes null
        /// (a removal) or an object.
        mutating func sortValue(objects: Bool = true) -> Value {
            switch g.int(in: 0..<20) {
            case 0: return .null
            case 1: return .bool(false)
            case 2: return .bool(true)
            case 3..<9: return .number(g.element(of: [-2, -1, 0, -0.0, 1, 2, 3, 0.5, 1e300, -1e300]))
            case 9..<14: return .string(g.element(of: ["", "a", "b", "ab", "A", "1", "\u{E9}", "\u{1F600}", "\u{FF61}", "\u{E000}"]))
            case 14 where objects: return .object([self.key(): .number(1)])
            default: return RandomValues.primitive(&g)
            }
        }

        /// A child of an indexed location: usually an object with some indexed fields, sometimes
        /// a primitive, rarely one too big for an index entry to copy. For "scores" (`.value`
        /// index) mostly a bare sort value; for "rooms" a room holding messages.
        mutating func item(_ kind: String = "posts") -> Value {
            if kind == "scores", g.chance(4, in: 5) {
                let value = self.sortValue()
                return value.isNull ? .number(0) : value
            }
            if kind == "rooms", g.chance(4, in: 5) {
                var room: [String: Value] = ["title": self.sortValue(), "stars": self.sortValue()]
                if g.chance(3, in: 4) { room["messages"] = self.list(count: 0...6) }
                return Value.object(room).normalized().isNull ? .object(["title": .string("t")]) : Value.object(room).normalized()
            }
            if g.chance(1, in: 40) {
                var big: [String: Value] = ["score": self.sortValue(), "stars": self.sortValue()]
                if g.bool() {
                    big["body"] = .string(String(repeating: "\u{E9}", count: Limits.indexCoverBytesMax))
                } else {
                    var tags: [String: Value] = [:]
                    for i in 0..<(Limits.indexCoverLeavesMax + g.int(in: -2...3)) { tags[String(i)] = .bool(true) }
                    big["tags"] = .object(tags)
                }
                return Value.object(big).normalized()
            }
            if g.chance(1, in: 12) { return RandomValues.primitive(&g) }
            var o: [String: Value] = [:]
            if g.chance(3, in: 4) { o["score"] = self.sortValue() }
            if g.chance(2, in: 3) {
                o["metrics"] = g.chance(1, in: 5) ? RandomValues.primitive(&g) : .object(["views": self.sortValue(), "likes": .number(1)])
            }
            if g.chance(2, in: 3) { o["stars"] = self.sortValue() }
            if g.chance(1, in: 2) {
                o["meta"] = g.chance(1, in: 5) ? RandomValues.primitive(&g) : .object(["rank": self.sortValue()])
            }
            if g.chance(1, in: 3) { o["title"] = .string(RandomValues.stringValue(&g)) }
            let value = Value.object(o).normalized()
            return value.isNull ? .object(["title": .string("t")]) : value
        }

        mutating func list(count: ClosedRange<Int>, _ kind: String = "posts") -> Value {
            var children: [String: Value] = [:]
            for _ in 0..<g.int(in: count) { children[self.key()] = self.item(kind) }
            return Value.object(children).normalized()
        }

        mutating func serverValue() -> Value {
            g.bool()
                ? .object([".sv": .string("timestamp")])
                : .object([".sv": .object(["increment": .number(Double(g.int(in: -3...3)))])])
        }

        /// A concrete indexed location, wildcards drawn from small pools.
        mutating func location() -> (pattern: String, path: Path) {
            switch g.int(in: 0..<5) {
            case 0: return ("posts", p("/posts"))
            case 1: return ("scores", p("/scores"))
            case 2: return ("user-posts/$uid", Path(validatedKeys: ["user-posts", g.element(of: QueryModelBasedTests.uids)]))
            case 3: return ("rooms", p("/rooms"))
            default: return ("rooms/$room/messages", Path(validatedKeys: ["rooms", g.element(of: QueryModelBasedTests.rooms), "messages"]))
            }
        }

        /// A tie-break key for a bound: usually a key, sometimes a string no key can be
        /// (Firebase's sentinels, forbidden characters, empty).
        mutating func tieBreak(_ existing: [String]) -> String {
            switch g.int(in: 0..<10) {
            case 0: return g.element(of: ["[MIN_NAME]", "[MAX_NAME]", "", "a.b", "a\u{0}", "1\u{0}", "\u{7F}", "a/b"])
            case 1, 2, 3, 4: return existing.isEmpty ? self.key() : g.element(of: existing)
            default: return self.key()
            }
        }
    }

    static func keyPool(_ g: inout SeededGenerator) -> [String] {
        var keys = [
            "a", "b", "c", "Z", "0", "1", "2", "10", "01", "-1", "-0", "00", "2147483647", "2147483648", "\u{E9}", "\u{1F600}",
            "\u{FF61}", "\u{E000}", "a\u{1F600}", "-", "+1",
        ]
        while keys.count < 28 {
            let key = RandomValues.key(&g)
            if key.utf8.count <= 24, !keys.contains(key) { keys.append(key) }
        }
        return keys
    }

    static func initialData(_ run: inout Run) -> Value {
        var userPosts: [String: Value] = [:]
        for uid in uids.prefix(3) { userPosts[uid] = run.list(count: 5...20) }
        return Value.object([
            "posts": run.list(count: 10...30), "scores": run.list(count: 10...30, "scores"), "user-posts": .object(userPosts),
            "rooms": run.list(count: 2...6, "rooms"), "other": .object(["x": .number(1)]),
        ]).normalized()
    }

    @Test(arguments: Variant.allCases) func randomQueriesMatchTheOracle(_ variant: Variant) async throws {
        let seed = SeededGenerator.seedFromEnvironment()
        let writes = SeededGenerator.eventsMaxFromEnvironment(default: 400)
        print("QueryModelBasedTests \(variant): EDDY_SEED=\(seed) EDDY_EVENTS_MAX=\(writes)")
        var g = SeededGenerator(seed: seed)
        let keys = Self.keyPool(&g)
        var run = Run(g: g, keys: keys)
        // Small build steps, so builds span many commit groups and writes land mid-build.
        var options = EngineOptions(durability: .none)
        options.indexBuildChunkChildren = variant == .indexesBeforeLoading ? 4096 : 3
        let h = try IndexHarness(options: options, label: "QueryModelBased\(variant)")
        defer { h.close() }
        var mismatches = 0
        var counts: [String: Int] = [:]

        let data = Self.initialData(&run)
        if variant != .indexesAfterLoading { try await h.setRules(Self.declarations) }
        try await h.set("/", data)
        if variant == .indexesAfterLoading {
            try await h.setRules(Self.declarations)
            for _ in 0..<20 {
                let write = try await Self.randomWrite(h, &run)  // while the indexes build
                counts[String(write.prefix { $0 != " " }), default: 0] += 1
            }
            try await h.engine.waitForIndexes()
        }

        for step in 0..<writes {
            var context = "seed \(seed) \(variant) step \(step)"
            h.clock.advance(by: UInt64(run.g.int(in: 0...2)))
            if variant == .rulesChangeMidRun, run.g.chance(1, in: 20) {
                context += try await Self.changeRules(h, &run)
                counts["rules", default: 0] += 1
            }
            let write = try await Self.randomWrite(h, &run)
            context += " " + write
            counts[String(write.prefix { $0 != " " }), default: 0] += 1

            for _ in 0..<4 {
                let (agreed, kind) = try await Self.randomQuery(h, &run, context)
                counts[kind, default: 0] += 1
                if !agreed { mismatches += 1 }
            }
            if step % 10 == 9, h.engine.indexStatus().allSatisfy({ $0.state == .ready }) {
                let report = try h.engine.verify()
                #expect(report.isHealthy, "\(context): \(report)")
                if !report.isHealthy { mismatches = 5 }
            }
            if mismatches >= 5 {
                Issue.record("\(context): stopping after \(mismatches) mismatches")
                break
            }
        }
        print("QueryModelBasedTests \(variant): seed \(seed): \(counts.sorted { $0.key < $1.key })")
        try await h.engine.waitForIndexes()
        let report = try h.engine.verify()
        #expect(report.isHealthy, "seed \(seed) \(variant): \(report)")
        #expect(try await h.engine.get(.root) == h.model.root, "seed \(seed) \(variant): the tree")
        if mismatches < 5 { try await h.checkAll("seed \(seed) \(variant) final") }
    }

    /// Drops a random declaration, or declares everything again (then usually waits for the
    /// build; otherwise the next query waits for it).
    static func changeRules(_ h: IndexHarness, _ run: inout Run) async throws -> String {
        var declared = h.declarations
        let dropped = Self.declarations.flatMap { pattern, ons in ons.map { (pattern, $0) } }
            .filter { !(declared[$0.0] ?? []).contains($0.1) }
        if dropped.isEmpty || run.g.chance(1, in: 3) {
            let candidates = declared.flatMap { pattern, ons in ons.map { (pattern, $0) } }.sorted { "\($0)" < "\($1)" }
            guard !candidates.isEmpty else { return "" }
            let (pattern, on) = run.g.element(of: candidates)
            declared[pattern] = declared[pattern]!.filter { $0 != on }
            if declared[pattern]!.isEmpty { declared[pattern] = nil }
            try await h.setRules(declared)
            return " [dropped \(pattern) \(on)]"
        }
        try await h.setRules(Self.declarations)
        if run.g.chance(2, in: 3) {
            try await h.engine.waitForIndexes()
            return " [declared all again, waited]"
        }
        return " [declared all again]"
    }

    /// One random write to engine and model; returns its description.
    static func randomWrite(_ h: IndexHarness, _ run: inout Run) async throws -> String {
        let (pattern, location) = run.location()
        let kind = pattern == "scores" || pattern == "rooms" ? pattern : "posts"
        let forScores = kind == "scores"
        let existing: [String] = {
            guard case .object(let children) = h.model.get(location) else { return [] }
            return children.keys.sorted()
        }()
        let child = !existing.isEmpty && run.g.chance(2, in: 3) ? run.g.element(of: existing) : run.key()
        let item = "\(location)/\(child)"
        switch run.g.int(in: 0..<100) {
        case 0..<20:
            let value = run.item(kind)
            try await h.set(item, value)
            return "set \(item) = \(text(value))"
        case 20..<40:
            let field = run.g.element(of: Self.fields)
            let value = run.sortValue()
            try await h.set("\(item)/\(field)", value)
            return "set \(item)/\(field) = \(text(value))"
        case 40..<50:
            var fields = ["score", "metrics/views", "stars", "meta/rank", "title"]
            var changes: [(String, Value)] = []
            for _ in 0..<run.g.int(in: 1...3) {
                let field = fields.remove(at: run.g.int(in: 0..<fields.count))
                changes.append((field, run.g.chance(1, in: 6) ? run.serverValue() : run.sortValue()))
            }
            try await h.update(item, changes)
            return "update \(item) \(changes.map { "\($0.0)=\(text($0.1))" })"
        case 50..<56:
            var changes: [(String, Value)] = []
            for _ in 0..<run.g.int(in: 1...4) {
                let (_, other) = run.location()
                let path = "\(other.keys.joined(separator: "/"))/\(run.key())/\(run.g.element(of: ["score", "stars", "metrics/views"]))"
                if changes.contains(where: { p($0.0).isAncestorOrSelf(of: p(path)) || p(path).isAncestorOrSelf(of: p($0.0)) }) { continue }
                changes.append((path, run.sortValue()))
            }
            try await h.update("/", changes)
            return "update / \(changes.map { "\($0.0)=\(text($0.1))" })"
        case 56..<60:
            var changes: [(String, Value)] = []
            for _ in 0..<run.g.int(in: 1...3) {
                let key = run.key()
                if changes.contains(where: { $0.0 == key }) { continue }
                changes.append((key, run.g.chance(1, in: 5) ? .null : run.item(kind)))
            }
            try await h.update("\(location)", changes)
            return "update \(location) \(changes.map { "\($0.0)=\(text($0.1))" })"
        case 60..<68:
            let value = run.item(kind)
            let key = try await h.push("\(location)", value)
            return "push \(location) \(text(value)) as \(key)"
        case 68..<78:
            let path = run.g.bool() ? item : "\(item)/\(run.g.element(of: Self.fields))"
            try await h.remove(path)
            return "remove \(path)"
        case 78..<86:
            let path = forScores && run.g.bool() ? item : "\(item)/\(run.g.element(of: ["score", "metrics/views", "stars", "meta/rank"]))"
            let value = run.serverValue()
            try await h.set(path, value)
            return "set \(path) = \(text(value))"
        case 86..<89:
            let value = RandomValues.primitive(&run.g)
            try await h.set(item, value)
            return "set \(item) = \(text(value))"
        case 89..<91:
            let value = run.list(count: 0...15, kind)
            try await h.set("\(location)", value)
            return "set \(location) = <list of \(value.leafCount) leaves>"
        case 91..<92:
            if run.g.bool() {
                try await h.remove("\(location)")
                return "remove \(location)"
            }
            try await h.set("\(location)", .number(1))
            return "set \(location) = 1"
        case 92..<93:
            let value: Value = run.g.bool() ? .object(["u1": run.list(count: 1...6)]) : .string("flat")
            try await h.set("/user-posts", value)
            return "set /user-posts = \(text(value))"
        case 93..<94:
            let value = Self.initialData(&run)
            try await h.set("/", value)
            return "set / = <new data>"
        case 94..<97:
            let path = run.g.element(of: [
                "/other/\(run.key())", "\(item)/metrics/views/deep", "/rooms/\(run.g.element(of: Self.rooms))/messages/\(run.key())/score",
                "/rooms/\(run.g.element(of: Self.rooms))/messages/\(run.key())/meta/rank",
            ])
            try await h.set(path, .number(2))
            return "set \(path) = 2"
        default:
            try h.reopen()
            return "restart"
        }
    }

    /// One random query, engine against oracle (or the Index-not-defined error for a dropped
    /// index): whether they agreed, and what kind of answer it was (for the run's statistics).
    static func randomQuery(_ h: IndexHarness, _ run: inout Run, _ context: String) async throws -> (Bool, String) {
        let (pattern, location) = run.location()
        let names = Self.declarations[pattern]!
        let order: Query.Order
        let name: String?
        if run.g.chance(1, in: 4) {
            order = .key
            name = nil
        } else {
            let n = run.g.element(of: names)
            order = n == ".value" ? .value : .child(p(n))
            name = n
        }
        var children: [String: Value] = [:]
        if case .object(let c) = h.model.get(location) { children = c }
        let keys = children.keys.sorted()

        func bound(_ run: inout Run) -> Query.Bound? {
            if run.g.chance(1, in: 3) { return nil }
            let fromData = !keys.isEmpty && run.g.bool()
            let key = fromData ? run.g.element(of: keys) : run.key()
            if order == .key {
                let string = fromData || run.g.chance(3, in: 4) ? key : run.tieBreak(keys)
                return Query.Bound(value: .string(string), inclusive: run.g.bool())
            }
            var value = fromData ? ReferenceModel.sortValue(of: children[key]!, order) : run.sortValue(objects: false)
            if case .object = value { value = run.sortValue(objects: false) }
            let tieBreak: String? = run.g.chance(2, in: 5) ? nil : (fromData && run.g.bool() ? key : run.tieBreak(keys))
            return Query.Bound(value: value, key: tieBreak, inclusive: run.g.bool())
        }
        var query = Query(order: order, start: bound(&run), end: bound(&run))
        // Mostly a window that can hold something: the lower of two bounds as the start.
        if let start = query.start, let end = query.end, run.g.chance(3, in: 4) {
            let c: Int
            if case .string(let a) = start.value, case .string(let b) = end.value, order == .key {
                c = Key.compare(a, b)
            } else {
                c = ValueOrder.compare(start.value, end.value)
            }
            if c > 0 {
                (query.start!.value, query.end!.value) = (end.value, start.value)
                (query.start!.key, query.end!.key) = (end.key, start.key)
            }
        }
        if run.g.chance(1, in: 6), let start = query.start {  // equalTo
            query.start!.inclusive = true
            query.end = start
            query.end!.inclusive = true
        }
        switch run.g.int(in: 0..<5) {
        case 0, 1: query.limit = nil
        case 2, 3: query.limit = .first(run.g.int(in: 1...6))
        default: query.limit = .last(run.g.int(in: 1...6))
        }

        let question = "\(context)\n  query \(location) \(describe(query))"
        if let name, !(h.declarations[pattern] ?? []).contains(name) {
            let error = await expectEddyError(.invalidArgument, mentioning: ["Index not defined"], question) {
                _ = try await h.engine.query(location, query)
            }
            return (error?.code == .invalidArgument, "query refused")
        }
        let expected = h.model.query(location, query)
        let got: Value
        do {
            got = try await h.engine.query(location, query)
        } catch {
            Issue.record("\(question)\n  threw \(error)")
            return (false, "query threw")
        }
        #expect(got == expected, "\(question)\n  expected \(text(expected))\n  got      \(text(got))")
        // The JSON answer (what REST sends, joined from covered entries) says the same.
        let json = try await h.engine.queryJSON(location, query)
        let parsed = try JSONParser.parse(json).normalized()
        #expect(parsed == expected, "\(question)\n  JSON answer \(String(decoding: json, as: UTF8.self))")
        if query.order == .key {
            // Written straight from the tree: byte for byte what JSONWriter writes for the value.
            #expect(json == JSONWriter.bytes(expected), "\(question)\n  JSON answer \(String(decoding: json, as: UTF8.self))")
        }
        return (got == expected && parsed == expected, expected.isNull ? "query empty" : "query selected")
    }
}
