// Value- and child-ordered queries against a real engine: Firebase's ordering rules as tables
// (mixed types, integer-like keys as tie-breaks, nested child paths, missing children), every
// bound kind with and without the key tie-break, limits, and index maintenance under every kind
// of write, with indexes declared before the data is written and after it (an online build).
// Each scenario also compares a battery of queries with the oracle (`ReferenceModel.query`) and
// ends with a healthy `verify()`.
//
// Results are unordered objects, so order is tested through windows: the keys of
// limitToFirst(1), limitToFirst(2), ... each add exactly the next child.

import EddyEngine
import EddyModel
import EddyTesting
import Testing

@Suite struct IndexQueryTests {
    static let declarations: [String: [String]] = [
        "posts": ["score", "metrics/views"], "scores": [".value"], "user-posts/$uid": ["stars", ".value"],
    ]

    /// Data for the maintenance scenarios: ties, missing children, a primitive `metrics`,
    /// integer-like and supplementary-plane keys, primitive children of indexed locations.
    static let data = json(
        #"""
        {"posts": {"p1": {"score": 5, "metrics": {"views": 10}, "title": "a"}, "p2": {"score": 3, "metrics": {"views": 10}},
                   "p3": {"score": 5}, "p4": {"score": "high", "metrics": {"views": -1}}, "p5": {"metrics": 4},
                   "1": {"score": 5, "metrics": {"views": 0}}, "01": {"score": true}, "\ud83d\ude00": {"score": 3.5, "metrics": {"views": "x"}},
                   "p6": 12},
         "scores": {"a": 3, "b": 0, "c": "x", "d": {"deep": 1}, "e": true, "2": 3, "10": 3, "f": -7},
         "user-posts": {"u1": {"k1": {"stars": 3}, "k2": {"stars": 1}, "k3": {"title": "t"}, "4": 7},
                        "u2": {"k1": {"stars": "s"}, "k9": {"stars": 1}}, "u3": 5},
         "other": {"x": 1}}
        """#)

    /// Expects the order of the children of `path` (windows) to be `expected`, and the oracle to agree.
    static func expectOrder(
        _ h: IndexHarness, _ path: String, _ order: Query.Order, _ expected: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let got = try await h.orderedKeys(p(path), Query(order: order), sourceLocation: sourceLocation)
        #expect(got == expected, "\(path) \(describe(Query(order: order)))", sourceLocation: sourceLocation)
        var children: [String: Value] = [:]
        if case .object(let c) = h.model.get(p(path)) { children = c }
        #expect(ReferenceModel.select(children, Query(order: order)) == expected, "oracle", sourceLocation: sourceLocation)
    }

    /// Expects `query` at `path` to select exactly `expected` (and the oracle to agree).
    static func expectKeys(
        _ h: IndexHarness, _ path: String, _ query: Query, _ expected: Set<String>, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let got = try await h.engine.query(p(path), query)
        #expect(resultKeys(got) == expected, "\(path) \(describe(query))", sourceLocation: sourceLocation)
        #expect(resultKeys(h.model.query(p(path), query)) == expected, "oracle: \(path) \(describe(query))", sourceLocation: sourceLocation)
        #expect(got == h.model.query(p(path), query), "values: \(path) \(describe(query))", sourceLocation: sourceLocation)
    }

    // MARK: Ordering tables

    @Test(arguments: IndexTiming.allCases) func firebaseReferenceExample(_ timing: IndexTiming) async throws {
        let list = json(#"{"a":{"h":3},"b":{"h":"x"},"c":{"x":1},"d":{"h":true},"e":{"h":false},"f":{"h":{"k":1}},"g":{"h":1.5}}"#)
        try await IndexHarness.run(timing, ["list": ["h"]], data: .object(["list": list])) { h in
            try await Self.expectOrder(h, "/list", .child(p("h")), ["c", "e", "d", "g", "a", "b", "f"])
        }
    }

    /// null/missing < false < true < numbers < strings (UTF-16 code units) < objects; ties by key.
    static let mixedOrder = [
        "n1", "n2", "f", "t", "bigneg", "neg", "negzero", "zero", "frac", "big",
        "sempty", "sA", "sa", "sab", "se", "shan", "semoji", "spriv", "sff61", "o1", "o2",
    ]
    static let mixedValues: [String: Value] = [
        "f": .bool(false), "t": .bool(true), "bigneg": .number(-1e300), "neg": .number(-5), "negzero": .number(-0.0),
        "zero": .number(0), "frac": .number(0.5), "big": .number(1e300), "sempty": .string(""), "sA": .string("A"),
        "sa": .string("a"), "sab": .string("ab"), "se": .string("\u{E9}"), "shan": .string("\u{4E2D}"),
        "semoji": .string("\u{1F600}"), "spriv": .string("\u{E000}"), "sff61": .string("\u{FF61}"),
        "o1": .object(["x": .number(1)]), "o2": .object(["a": .string("z")]),
    ]

    @Test(arguments: IndexTiming.allCases) func mixedTypesByChild(_ timing: IndexTiming) async throws {
        var list: [String: Value] = ["n1": .object(["w": .number(1)]), "n2": .string("a primitive child has no v")]
        for (key, value) in Self.mixedValues { list[key] = .object(["v": value, "other": .number(1)]) }
        try await IndexHarness.run(timing, ["list": ["v"]], data: .object(["list": .object(list)])) { h in
            let v: Query.Order = .child(p("v"))
            try await Self.expectOrder(h, "/list", v, Self.mixedOrder)
            try await Self.expectKeys(h, "/list", Query(order: v, start: at(.number(0)), end: at(.number(-0.0))), ["negzero", "zero"])
            try await Self.expectKeys(h, "/list", Query(order: v, start: at(.number(-0.0), "zero")), Set(Self.mixedOrder[7...]))
            try await Self.expectKeys(h, "/list", Query(order: v, end: at(.null)), ["n1", "n2"])
            try await Self.expectKeys(h, "/list", Query(order: v, start: excl(.null, "n1"), end: at(.bool(false))), ["n2", "f"])
            try await Self.expectKeys(
                h, "/list", Query(order: v, start: at(.string("\u{1F600}")), end: at(.string("\u{E000}"))), ["semoji", "spriv"])
            try await Self.expectKeys(h, "/list", Query(order: v, start: excl(.string("\u{FF61}"))), ["o1", "o2"])
            try await Self.expectKeys(h, "/list", Query(order: v, start: at(.number(1e300))), Set(Self.mixedOrder[9...]))
            try await Self.expectKeys(h, "/list", Query(order: v, end: excl(.number(-1e300))), ["n1", "n2", "f", "t"])
        }
    }

    @Test(arguments: IndexTiming.allCases) func mixedTypesByValue(_ timing: IndexTiming) async throws {
        try await IndexHarness.run(timing, ["list": [".value"]], data: .object(["list": .object(Self.mixedValues)])) { h in
            try await Self.expectOrder(h, "/list", .value, Array(Self.mixedOrder.dropFirst(2)))
            try await Self.expectKeys(
                h, "/list", Query(order: .value, start: at(.bool(true)), end: at(.number(0), "negzero")), ["t", "bigneg", "neg", "negzero"])
            try await Self.expectKeys(
                h, "/list", Query(order: .value, start: at(.string("a")), end: at(.string("\u{E9}"))), ["sa", "sab", "se"])
            try await Self.expectKeys(h, "/list", Query(order: .value, start: at(.string("")), limit: .last(3)), ["sff61", "o1", "o2"])
            try await Self.expectKeys(h, "/list", Query(order: .value, end: at(.null)), [])
        }
    }

    /// Integer-like keys sort numerically (equal values: shorter first), before every string key.
    static let tieOrder = ["-2147483648", "-1", "0", "-0", "1", "01", "2", "10", "2147483647", "2147483648", "2147483649", "a"]

    @Test(arguments: IndexTiming.allCases) func integerLikeKeysBreakTies(_ timing: IndexTiming) async throws {
        var list: [String: Value] = [:]
        for key in Self.tieOrder { list[key] = .object(["v": .number(7)]) }
        list["x"] = .object(["v": .number(6)])
        list["y"] = .object(["v": .number(8)])
        try await IndexHarness.run(timing, ["list": ["v", ".value"]], data: .object(["list": .object(list)])) { h in
            try await Self.expectOrder(h, "/list", .child(p("v")), ["x"] + Self.tieOrder + ["y"])
            try await Self.expectOrder(h, "/list", .value, Self.tieOrder + ["x", "y"])  // all objects: key order only
            let v: Query.Order = .child(p("v"))
            let seven = Value.number(7)
            try await Self.expectKeys(h, "/list", Query(order: v, start: at(seven, "01")), Set(Self.tieOrder[5...]).union(["y"]))
            try await Self.expectKeys(h, "/list", Query(order: v, start: excl(seven, "-0")), Set(Self.tieOrder[4...]).union(["y"]))
            try await Self.expectKeys(h, "/list", Query(order: v, end: at(seven, "2147483647")), Set(Self.tieOrder[...8]).union(["x"]))
            try await Self.expectKeys(h, "/list", Query(order: v, end: excl(seven, "0")), ["x", "-2147483648", "-1"])
            try await Self.expectKeys(h, "/list", Query(order: v, start: at(seven, "-0"), end: at(seven, "-0")), ["-0"])
            // "00" ties with "-0" by value and length; by bytes "-0" < "00" < "1". No child is "00".
            try await Self.expectKeys(h, "/list", Query(order: v, start: at(seven, "00"), end: at(seven, "00")), [])
            try await Self.expectKeys(h, "/list", Query(order: v, start: at(seven, "00"), limit: .first(1)), ["1"])
            try await Self.expectKeys(h, "/list", Query(order: v, end: at(seven, "00"), limit: .last(1)), ["-0"])
            try await Self.expectKeys(
                h, "/list", Query(order: v, start: at(seven, "2147483648"), end: at(seven, "b")), ["2147483648", "2147483649", "a"])
            try await Self.expectKeys(
                h, "/list", Query(order: v, start: excl(seven, "2147483647"), end: excl(seven, "2147483649")), ["2147483648"])
            try await Self.expectKeys(h, "/list", Query(order: .value, start: at(.null, "01"), end: at(.null, "zz")), [])  // objects are after null
        }
    }

    @Test(arguments: IndexTiming.allCases) func nestedChildPaths(_ timing: IndexTiming) async throws {
        let posts = json(
            #"""
            {"p1": {"metrics": {"views": 10}}, "p2": {"metrics": {"views": 3}}, "p3": {"metrics": 5}, "p4": {"title": "x"},
             "p5": {"metrics": {"views": {"a": 1}}}, "p6": {"metrics": {"views": "many"}}, "p7": {"metrics": {"views": 3, "likes": 1}}, "p8": 42}
            """#)
        try await IndexHarness.run(timing, ["posts": ["metrics/views", "metrics"]], data: .object(["posts": posts])) { h in
            let views: Query.Order = .child(p("metrics/views"))
            try await Self.expectOrder(h, "/posts", views, ["p3", "p4", "p8", "p2", "p7", "p1", "p6", "p5"])
            // By "metrics": missing, then the number, then objects tied by key.
            try await Self.expectOrder(h, "/posts", .child(p("metrics")), ["p4", "p8", "p3", "p1", "p2", "p5", "p6", "p7"])
            try await Self.expectKeys(h, "/posts", Query(order: views, end: at(.null)), ["p3", "p4", "p8"])
            try await Self.expectKeys(h, "/posts", Query(order: views, start: at(.number(3), "p1"), end: excl(.number(3), "p7")), ["p2"])
            try await Self.expectKeys(h, "/posts", Query(order: views, start: at(.string("")), limit: .first(1)), ["p6"])
            try await h.set("/posts/p3/metrics/views", .number(3))  // below a primitive `metrics`
            try await h.checkAll("p3 metrics replaced")
            try await Self.expectOrder(h, "/posts", .child(p("metrics/views")), ["p4", "p8", "p2", "p3", "p7", "p1", "p6", "p5"])
        }
    }

    /// Every bound kind, with and without the key, on g(missing) h(true) a(1) b c d(2) e(3) f("x").
    @Test(arguments: IndexTiming.allCases) func everyBoundKind(_ timing: IndexTiming) async throws {
        let list = json(
            #"{"a":{"s":1},"b":{"s":2},"c":{"s":2},"d":{"s":2},"e":{"s":3},"f":{"s":"x"},"g":{"t":1},"h":{"s":true}}"#)
        let s: Query.Order = .child(p("s"))
        let two = Value.number(2)
        typealias Row = (start: Query.Bound?, end: Query.Bound?, limit: Query.Limit?, expected: Set<String>)
        let rows: [Row] = [
            (at(two), nil, nil, ["b", "c", "d", "e", "f"]),
            (at(two, "c"), nil, nil, ["c", "d", "e", "f"]),
            (excl(two), nil, nil, ["e", "f"]),
            (excl(two, "c"), nil, nil, ["d", "e", "f"]),
            (nil, at(two), nil, ["g", "h", "a", "b", "c", "d"]),
            (nil, at(two, "c"), nil, ["g", "h", "a", "b", "c"]),
            (nil, excl(two), nil, ["g", "h", "a"]),
            (nil, excl(two, "c"), nil, ["g", "h", "a", "b"]),
            (at(two), at(two), nil, ["b", "c", "d"]),  // equalTo(2)
            (at(two, "c"), at(two, "c"), nil, ["c"]),  // equalTo(2, "c")
            (at(two, "zz"), at(two, "zz"), nil, []),
            (at(.null), nil, nil, ["g", "h", "a", "b", "c", "d", "e", "f"]),
            (nil, at(.null), nil, ["g"]),
            (at(.null), at(.null), nil, ["g"]),
            (excl(.null), nil, nil, ["h", "a", "b", "c", "d", "e", "f"]),
            (at(.bool(true)), at(.bool(true)), nil, ["h"]),
            (at(.bool(false)), nil, nil, ["h", "a", "b", "c", "d", "e", "f"]),
            (nil, excl(.bool(false)), nil, ["g"]),
            (at(.number(1.5)), nil, nil, ["b", "c", "d", "e", "f"]),
            (at(.string("")), nil, nil, ["f"]),
            (excl(.string("x")), nil, nil, []),
            (at(.string("x")), at(.string("x")), nil, ["f"]),
            (nil, at(two, "c"), .last(2), ["b", "c"]),
            (at(two), nil, .first(2), ["b", "c"]),
            (at(two, "b"), at(two, "d"), .first(1), ["b"]),
            (at(two, "b"), at(two, "d"), .last(1), ["d"]),
            (excl(two, "b"), excl(two, "d"), .last(5), ["c"]),
            (at(.number(3)), at(.number(1)), nil, []),
            (at(two, "d"), at(two, "b"), nil, []),
            (excl(two, "d"), excl(.number(3)), nil, []),
            (excl(two, "d"), at(.number(3)), nil, ["e"]),
            (excl(.number(1), "a"), excl(.number(3), "a"), nil, ["b", "c", "d"]),
            (nil, nil, .first(3), ["g", "h", "a"]),
            (nil, nil, .last(3), ["d", "e", "f"]),
            (nil, nil, .last(100), ["a", "b", "c", "d", "e", "f", "g", "h"]),
        ]
        try await IndexHarness.run(timing, ["list": ["s"]], data: .object(["list": list])) { h in
            try await Self.expectOrder(h, "/list", s, ["g", "h", "a", "b", "c", "d", "e", "f"])
            for row in rows {
                try await Self.expectKeys(h, "/list", Query(order: s, start: row.start, end: row.end, limit: row.limit), row.expected)
            }
            // Key order on the same list, indexed or not.
            try await Self.expectKeys(h, "/list", Query(order: .key, start: at(.string("b")), end: excl(.string("e"))), ["b", "c", "d"])
            try await Self.expectKeys(h, "/list", Query(order: .key, start: excl(.string("b")), limit: .last(2)), ["g", "h"])
        }
    }

    @Test(arguments: IndexTiming.allCases) func negativeZeroTiesWithZero(_ timing: IndexTiming) async throws {
        // -0 and 0 are one value: ordered by key whichever is which, and found by either bound.
        let list: Value = .object([
            "a": .number(0), "b": .number(-0.0), "c": .number(0), "d": .object(["v": .number(-0.0)]), "e": .object(["v": .number(0)]),
        ])
        try await IndexHarness.run(timing, ["list": [".value", "v"]], data: .object(["list": list])) { h in
            try await Self.expectOrder(h, "/list", .value, ["a", "b", "c", "d", "e"])
            let v: Query.Order = .child(p("v"))
            try await Self.expectOrder(h, "/list", v, ["a", "b", "c", "d", "e"])
            try await Self.expectKeys(h, "/list", Query(order: .value, start: at(.number(-0.0), "b"), end: at(.number(0))), ["b", "c"])
            try await Self.expectKeys(h, "/list", Query(order: .value, start: at(.number(0), "b"), end: at(.number(-0.0), "b")), ["b"])
            try await Self.expectKeys(h, "/list", Query(order: v, start: at(.number(0), "d"), end: at(.number(-0.0))), ["d", "e"])
        }
    }

    @Test(arguments: IndexTiming.allCases) func stringsWithControlCharactersAndSurrogates(_ timing: IndexTiming) async throws {
        // UTF-16 code-unit order (U+10000 is D800 DC00: below U+E000 and U+FFFD); NUL inside a
        // string must not end it early.
        let strings = [
            "", "\u{0}", "\u{0}\u{0}", "a", "a\u{0}", "a\u{0}b", "a\u{1}", "a\u{7F}", "a\u{FFFD}", "a\u{10000}", "a\u{E000}", "a\u{FFFF}", "ab",
        ]
        var list: [String: Value] = [:]
        for (i, string) in strings.enumerated() { list["k\(i)"] = .string(string) }
        try await IndexHarness.run(timing, ["list": [".value"]], data: .object(["list": .object(list)])) { h in
            try await Self.expectOrder(h, "/list", .value, ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k12", "k7", "k9", "k10", "k8", "k11"])
            try await Self.expectKeys(
                h, "/list", Query(order: .value, start: excl(.string("a")), end: at(.string("a\u{1}"))), ["k4", "k5", "k6"])
            try await Self.expectKeys(h, "/list", Query(order: .value, start: at(.string("a\u{0}")), end: at(.string("a\u{0}"))), ["k4"])
            try await Self.expectKeys(
                h, "/list", Query(order: .value, start: at(.string("a\u{D7FF}")), end: at(.string("a\u{E000}"))), ["k9", "k10"])
        }
    }

    @Test(arguments: IndexTiming.allCases) func sentinelAndNonKeyTieBreaks(_ timing: IndexTiming) async throws {
        let list = json(#"{"a":{"s":1},"b":{"s":1},"c":{"s":1},"d":{"s":2},"0":{"s":1}}"#)
        let s: Query.Order = .child(p("s"))
        let one = Value.number(1)
        try await IndexHarness.run(timing, ["list": ["s"]], data: .object(["list": list])) { h in
            try await Self.expectKeys(h, "/list", Query(order: s, start: at(one, "[MAX_NAME]")), ["d"])
            try await Self.expectKeys(h, "/list", Query(order: s, start: at(one, "[MIN_NAME]")), ["0", "a", "b", "c", "d"])
            try await Self.expectKeys(h, "/list", Query(order: s, end: at(one, "[MIN_NAME]")), [])
            try await Self.expectKeys(h, "/list", Query(order: s, end: at(one, "[MAX_NAME]")), ["0", "a", "b", "c"])
            try await Self.expectKeys(h, "/list", Query(order: s, start: at(one, ""), end: at(one, "a\u{0}")), ["a"])
            try await Self.expectKeys(h, "/list", Query(order: s, start: excl(one, "a\u{0}"), end: excl(one, "b.x")), ["b"])
            try await Self.expectKeys(h, "/list", Query(order: s, start: at(one, "00"), end: at(one, "a/b")), ["a"])
            try await Self.expectKeys(h, "/list", Query(order: s, start: at(one, "-0"), limit: .first(1)), ["a"])
            try await Self.expectKeys(h, "/list", Query(order: s, end: at(one, "\u{1F600}"), limit: .last(1)), ["c"])
        }
    }

    @Test(arguments: IndexTiming.allCases) func rootLevelIndex(_ timing: IndexTiming) async throws {
        try await IndexHarness.run(timing, ["": ["score"]], data: json(#"{"x": {"score": 2}, "y": {"score": 1}, "z": 3}"#)) { h in
            try await Self.expectOrder(h, "/", .child(p("score")), ["z", "y", "x"])
            try await h.set("/w/score", .number(0))
            try await h.update("/", [("x/score", .number(-1)), ("z", .null), ("v", json(#"{"score": "s"}"#))])
            try await h.checkAll("root children written")
            try await h.set("/", json(#"{"a": {"score": 5}, "b": 1}"#))
            try await h.checkAll("root replaced")
            try await h.set("/", .null)
            try await h.checkAll("root removed")
            try await h.set("/", .number(1))
            try await h.set("/q/score", .number(1))
            try await h.checkAll("root primitive, then written below")
        }
    }

    /// A literal after a wildcard, an index inside the children of another index, a nested
    /// child path: one write can touch entries of several indexes.
    @Test(arguments: IndexTiming.allCases) func nestedIndexLocations(_ timing: IndexTiming) async throws {
        let declarations: [String: [String]] = ["rooms": ["title", ".value"], "rooms/$room/messages": ["ts", "user/name"]]
        let data = json(
            #"""
            {"rooms": {"r1": {"title": "b", "messages": {"m1": {"ts": 3, "user": {"name": "x"}}, "m2": {"ts": 1}, "m3": {"ts": 3, "user": "flat"}}},
                       "r2": {"title": "a", "messages": {"m1": {"ts": 0, "user": {"name": "y"}}}, "other": {"m9": {"ts": 1}}},
                       "r3": 7}}
            """#)
        try await IndexHarness.run(timing, declarations, data: data) { h in
            try await Self.expectOrder(h, "/rooms/r1/messages", .child(p("ts")), ["m2", "m1", "m3"])
            try await h.set("/rooms/r1/messages/m2/ts", .number(9))
            try await h.checkAll("a message's ts")
            try await h.set("/rooms/r2/messages", json(#"{"n1": {"ts": 5}, "n2": {"ts": 4, "user": {"name": "z"}}}"#))
            try await h.checkAll("a room's messages replaced")
            try await h.set("/rooms/r2", json(#"{"title": "c", "messages": {"k": {"ts": 1}}}"#))
            try await h.checkAll("a room replaced")
            try await h.set("/rooms/r3/messages/m1/ts", .number(2))
            try await h.checkAll("below a primitive room")
            try await h.update("/rooms", [("r1/messages/m1/user/name", .string("a")), ("r2/title", .null), ("r4/messages/x/ts", .number(1))])
            try await h.checkAll("update across rooms")
            try await h.remove("/rooms/r1/messages")
            try await h.checkAll("messages removed")
            try await h.set("/rooms/r1/messages", .string("none"))
            try await h.checkAll("messages a primitive")
            await h.expectIndexNotDefined("/rooms/r1", "ts")
            await h.expectIndexNotDefined("/rooms/r1/other", "ts")
        }
    }

    /// Children too big to copy into an entry (over `Limits.indexCoverBytesMax` bytes or
    /// `Limits.indexCoverLeavesMax` leaves) are read from the tree; writes move them across both limits.
    @Test(arguments: IndexTiming.allCases) func largeChildren(_ timing: IndexTiming) async throws {
        let long = String(repeating: "\u{E9}x", count: Limits.indexCoverBytesMax)
        var tags: [String: Value] = [:]
        for i in 0..<(Limits.indexCoverLeavesMax + 10) { tags["t\(i)"] = .number(Double(i)) }
        let data: Value = .object([
            "posts": .object([
                "big": .object(["score": .number(2), "body": .string(long)]),
                "wide": .object(["score": .number(1), "tags": .object(tags)]),
                "small": .object(["score": .number(3)]),
            ]),
            "values": .object(["long": .string(long), "short": .string("a"), "wide": .object(tags)]),
        ])
        try await IndexHarness.run(timing, ["posts": ["score", "tags/t3"], "values": [".value"]], data: data) { h in
            try await Self.expectOrder(h, "/posts", .child(p("score")), ["wide", "big", "small"])
            try await h.set("/posts/wide/score", .number(10))
            try await h.set("/posts/big/score", .number(0))
            try await h.checkAll("scores inside large children", thorough: false)
            try await h.set("/posts/wide/tags/t3", .number(-1))
            try await h.checkAll("a tag inside a wide child", thorough: false)
            try await h.remove("/posts/big/body")
            try await h.remove("/posts/wide/tags/t7")
            try await h.checkAll("large children shrink", thorough: false)
            let removals = ["t0", "t1", "t2", "t4", "t5", "t6", "t8", "t9", "t10", "t11"].map { ($0, Value.null) }
            try await h.update("/posts/wide/tags", removals)
            try await h.checkAll("the wide child is under the leaf limit")
            try await h.set("/posts/small/body", .string(long))
            try await h.set("/posts/small/tags", .object(tags))
            try await h.checkAll("a small child grows", thorough: false)
            try await h.set("/values/short", .string(long))
            try await h.set("/values/long", .string("b"))
            try await h.set("/values/wide/t0", .string("z"))
            try await h.checkAll("values across the limit")
            try await h.push("/posts", .object(["score": .number(1), "tags": .object(tags)]))
            try await h.checkAll("push a wide child")
        }
    }

    /// Writes racing into one commit group: each sees the earlier ones of its group (an
    /// increment after a set of the same child, a write below a primitive another just made).
    @Test func concurrentWritesShareCommitGroups() async throws {
        let h = try IndexHarness()
        defer { h.close() }
        try await h.setRules(Self.declarations)
        try await h.set("/", Self.data)
        let groupSizes = Counter()
        h.engine.observeCommits { entries in groupSizes.raise(to: entries.count) }
        var g = SeededGenerator(seed: SeededGenerator.seedFromEnvironment())
        let seed = g.seed
        let children = ["p1", "p2", "p3", "1", "01", "n"]
        let increment: Value = .object([".sv": .object(["increment": .number(1)])])
        for round in 0..<20 {
            var ops: [IndexHarness.Op] = []
            for _ in 0..<g.int(in: 2...12) {
                let child = "/posts/\(g.element(of: children))"
                switch g.int(in: 0..<8) {
                case 0: ops.append(.set(child, json(#"{"score": 1, "metrics": {"views": 2}}"#)))
                case 1: ops.append(.set(child + "/score", increment))
                case 2: ops.append(.set(child + "/metrics/views", .number(Double(g.int(in: 0...3)))))
                case 3: ops.append(.set(child, .number(Double(g.int(in: 0...3)))))
                case 4: ops.append(.remove(child))
                case 5:
                    let score = String(child.dropFirst("/posts/".count)) + "/score"
                    ops.append(.update("/posts", [(score, .number(Double(g.int(in: 0...3)))), ("z", .bool(true))]))
                case 6: ops.append(.push("/posts", json(#"{"score": 2}"#)))
                default: ops.append(.set("/user-posts/u1/\(g.element(of: children))/stars", increment))
                }
            }
            try await h.concurrently(ops)
            try await h.checkAll("seed \(seed) round \(round) \(ops)", thorough: round == 19)
        }
        #expect(groupSizes.value > 1, "seed \(seed): some commit groups held several writes")
    }

    // MARK: Index maintenance under every kind of write

    @Test(arguments: IndexTiming.allCases) func setAboveTheIndexedLocation(_ timing: IndexTiming) async throws {
        try await IndexHarness.run(timing, Self.declarations, data: Self.data) { h in
            try await h.set("/posts", json(#"{"q1": {"score": 2}, "p1": {"score": 9, "metrics": {"views": 1}}, "q2": {"metrics": {"views": 2}}}"#))
            try await h.checkAll("replace the list")
            try await h.set("/", Self.data)
            try await h.checkAll("replace the root")
            try await h.set("/user-posts", json(#"{"u9": {"a": {"stars": 2}, "b": {"stars": 1}}, "u1": {"z": {"stars": 0}}}"#))
            try await h.checkAll("replace a wildcard's parent")
            try await h.set("/posts", .number(7))
            try await h.checkAll("the list becomes a primitive")
            try await h.set("/posts/p1/score", .number(1))
            try await h.checkAll("a write below the primitive list")
            try await h.set("/posts", .null)
            try await h.checkAll("the list removed by set null")
            try await h.set("/", json(#"{"scores": {"a": 1, "b": 2}}"#))
            try await h.checkAll("root replaced without posts")
            try await h.set("/", Self.data)
            try await h.checkAll("root back")
        }
    }

    @Test(arguments: IndexTiming.allCases) func deepUpdatesInsideAChild(_ timing: IndexTiming) async throws {
        try await IndexHarness.run(timing, Self.declarations, data: Self.data) { h in
            try await h.set("/posts/p1/metrics/views", .number(-3))
            try await h.checkAll("set posts/p1/metrics/views")
            try await h.update("/posts/p2", [("metrics/views", .number(11)), ("score", .null)])
            try await h.checkAll("update inside p2")
            try await h.update("/", [("posts/p3/metrics/views", .string("v")), ("user-posts/u1/k2/stars", .number(9)), ("scores/a", .number(-100))])
            try await h.checkAll("multi-location update at the root")
            try await h.update("/posts", [("p9", json(#"{"score": 0, "metrics": {"views": 0}}"#)), ("p1/score", .string("s")), ("p4", .null)])
            try await h.checkAll("update at the list")
            try await h.set("/posts/p1/metrics", json(#"{"views": 3, "likes": 2}"#))
            try await h.checkAll("replace metrics")
            try await h.set("/posts/p1/metrics/likes", .number(5))
            try await h.checkAll("write beside the indexed child")
            try await h.set("/posts/p1/title", .null)
            try await h.checkAll("remove an unindexed field")
            try await h.set("/posts/p2/metrics/views/deep", .number(1))
            try await h.checkAll("views becomes an object")
            try await h.set("/user-posts/u2/k1", .number(3))
            try await h.checkAll("a wildcard child becomes a primitive")
        }
    }

    @Test(arguments: IndexTiming.allCases) func pushAndRemove(_ timing: IndexTiming) async throws {
        try await IndexHarness.run(timing, Self.declarations, data: Self.data) { h in
            let pushed = try await h.push("/posts", json(#"{"score": 4, "metrics": {"views": 10}}"#))
            try await h.checkAll("push \(pushed)")
            try await h.push("/posts", .number(1))
            try await h.push("/scores", .number(3))
            try await h.push("/user-posts/u1", json(#"{"stars": 2}"#))
            try await h.push("/user-posts/u4", json(#"{"stars": 2}"#))
            try await h.checkAll("pushes")
            try await h.remove("/posts/p2")
            try await h.checkAll("remove p2")
            try await h.remove("/posts/p1/metrics")
            try await h.checkAll("remove p1/metrics")
            try await h.remove("/posts/\(pushed)/score")
            try await h.remove("/posts/\(pushed)/metrics")
            try await h.checkAll("empty the pushed child")
            try await h.remove("/user-posts/u1")
            try await h.remove("/scores/a")
            try await h.checkAll("remove a wildcard location and a value")
            try await h.remove("/posts")
            try await h.remove("/user-posts")
            try await h.checkAll("remove the lists")
            try await h.push("/posts", json(#"{"score": 1}"#))
            try await h.checkAll("push into a removed list")
        }
    }

    @Test(arguments: IndexTiming.allCases) func serverValues(_ timing: IndexTiming) async throws {
        let increment = { (n: Double) -> Value in .object([".sv": .object(["increment": .number(n)])]) }
        let timestamp: Value = .object([".sv": .string("timestamp")])
        try await IndexHarness.run(timing, Self.declarations, data: Self.data) { h in
            try await h.set("/posts/p1/metrics/views", increment(5))
            try await h.set("/posts/p2/score", increment(-10))
            try await h.set("/posts/p5/score", increment(1))  // missing: becomes 1
            try await h.set("/posts/p4/score", increment(2))  // a string: becomes 2
            try await h.checkAll("increments")
            h.clock.advance(by: 1234)
            try await h.set("/posts/p3/score", timestamp)
            try await h.update("/", [("scores/b", timestamp), ("user-posts/u2/k9/stars", increment(100))])
            let pushed = try await h.push("/posts", .object(["score": timestamp, "metrics": .object(["views": increment(3)])]))
            try await h.checkAll("timestamps")
            #expect(try await h.engine.get(p("/posts/p3/score")) == .number(Double(h.clock.nowMilliseconds())))
            // The two timestamps are the greatest numbers and tie; the push key ("-N…") sorts first.
            try await Self.expectKeys(h, "/posts", Query(order: .child(p("score")), limit: .last(2)), ["p3", pushed])
            try await Self.expectKeys(h, "/posts", Query(order: .child(p("score")), limit: .last(1)), ["p3"])
        }
    }

    @Test(arguments: IndexTiming.allCases) func writesBelowAPrimitiveChild(_ timing: IndexTiming) async throws {
        try await IndexHarness.run(timing, Self.declarations, data: Self.data) { h in
            try await h.set("/posts/p6/score", .number(0))  // p6 was 12
            try await h.checkAll("set below a primitive child")
            try await h.set("/posts/p5/metrics/views", .number(99))  // p5/metrics was 4
            try await h.checkAll("set below a primitive metrics")
            try await h.update("/posts", [("p3/score/x", .number(1)), ("p1", .string("now a string"))])
            try await h.checkAll("update below a primitive score")
            try await h.set("/user-posts/u3/k1/stars", .number(8))  // u3 was 5
            try await h.checkAll("set below a primitive wildcard location")
            try await h.set("/scores/c/x", .number(1))  // "x" becomes {"x": 1}
            try await h.checkAll("a value-indexed primitive becomes an object")
            try await h.remove("/posts/p2/score/below")  // removing below a primitive changes nothing
            try await h.checkAll("remove below a primitive")
        }
    }

    @Test(arguments: IndexTiming.allCases) func wildcardLocations(_ timing: IndexTiming) async throws {
        try await IndexHarness.run(timing, Self.declarations, data: Self.data) { h in
            try await Self.expectOrder(h, "/user-posts/u1", .child(p("stars")), ["4", "k3", "k2", "k1"])
            try await Self.expectOrder(h, "/user-posts/u2", .child(p("stars")), ["k9", "k1"])
            #expect(try await h.engine.query(p("/user-posts/u3"), Query(order: .child(p("stars")))) == .null)
            #expect(try await h.engine.query(p("/user-posts/nobody"), Query(order: .child(p("stars")))) == .null)
            try await h.set("/user-posts/new/a", json(#"{"stars": 5}"#))
            try await h.set("/user-posts/new/b", json(#"{"stars": 4}"#))
            try await h.set("/user-posts/\u{1F600}", json(#"{"x": {"stars": 1}, "-1": {"stars": 1}}"#))
            try await h.checkAll("new wildcard locations")
            try await Self.expectOrder(h, "/user-posts/\u{1F600}", .child(p("stars")), ["-1", "x"])
            await h.expectIndexNotDefined("/user-posts", "stars")
            await h.expectIndexNotDefined("/user-posts/u1/k1", "stars")
            await h.expectIndexNotDefined("/posts", ".value")
            await h.expectIndexNotDefined("/posts", "metrics")
            await h.expectIndexNotDefined("/other", "score")
        }
    }

    @Test(arguments: IndexTiming.allCases) func droppingAnIndex(_ timing: IndexTiming) async throws {
        try await IndexHarness.run(timing, Self.declarations, data: Self.data) { h in
            var fewer = Self.declarations
            fewer["posts"] = ["metrics/views"]
            fewer["user-posts/$uid"] = nil
            try await h.setRules(fewer)
            await h.expectIndexNotDefined("/posts", "score")
            await h.expectIndexNotDefined("/user-posts/u1", "stars")
            await h.expectIndexNotDefined("/user-posts/u1", ".value")
            try await h.checkAll("after dropping")
            // Writes while dropped, then declare again: the new build sees them.
            try await h.set("/posts/p1/score", .number(-1))
            try await h.push("/posts", json(#"{"score": 100}"#))
            try await h.remove("/user-posts/u2/k9")
            try await h.set("/user-posts/u5/a/stars", .number(1))
            try await h.checkAll("writes while dropped")
            try await h.setRules(Self.declarations)
            try await h.engine.waitForIndexes()
            try await h.checkAll("declared again")
            try await h.setRules([:])
            await h.expectIndexNotDefined("/scores", ".value")
            #expect(h.engine.indexStatus().isEmpty)
            try await h.checkAll("everything dropped")
        }
    }

    @Test func indexStatusListsTheDeclarations() async throws {
        try await IndexHarness.run(.afterData, Self.declarations, data: Self.data) { h in
            let status = h.engine.indexStatus()
            let pairs = Set(status.map { "\($0.location) \($0.on)" })
            #expect(pairs == ["/posts score", "/posts metrics/views", "/scores .value", "/user-posts/$uid stars", "/user-posts/$uid .value"])
            for index in status {
                #expect(index.state == .ready, "\(index.json)")
                #expect(index.position == nil, "\(index.json)")
                #expect(index.json["state"] == .string("ready"), "\(index.json)")
                #expect(index.json["location"] == .string(index.location), "\(index.json)")
            }
            #expect(Set(status.map(\.id)).count == status.count, "ids are distinct")
            try h.reopen()
            let describe = { (status: [IndexStatus]) in Set(status.map { "\($0.location) \($0.on) \($0.state)" }) }
            #expect(describe(h.engine.indexStatus()) == describe(status))
            try await h.checkAll("after reopening")
        }
    }

    /// A slow online build (2 children per step, paused between steps): `readQuery` refuses
    /// while it runs (`query` waits), writes land on both sides of the build position, and a restart in the
    /// middle resumes it (faster, so what is left fits in the waiting query's 5 s).
    @Test func onlineBuildWithConcurrentWritesAndARestart() async throws {
        var options = EngineOptions(durability: .none)
        options.indexBuildChunkChildren = 2
        // 60 steps of 250 ms per index: the build is still running when the test looks, even
        // with the test's task put off for seconds on a loaded machine (at 20 ms it was once
        // over, both indexes built, before the first look; at 100 ms, 12 s for both, once too,
        // with the whole suite and other processes on 2 cores). The restart below makes it
        // faster, so the test does not wait for these steps.
        options.indexBuildPauseMilliseconds = 250
        let h = try IndexHarness(options: options)
        defer { h.close() }
        var posts: [String: Value] = [:]
        for i in 0..<120 { posts["p\(i)"] = .object(["score": .number(Double(i % 7)), "metrics": .object(["views": .number(Double(i % 5))])]) }
        try await h.set("/", .object(["posts": .object(posts), "scores": json(#"{"a": 1}"#)]))
        try await h.setRules(["posts": ["score", "metrics/views"]])
        // Indexes build one after the other; the last one still has 60 steps of 250 ms ahead.
        let building = try #require(h.engine.indexStatus().last { $0.state == .building }, "a 60-step build is still running")
        #expect(building.position != nil)
        await expectEddyError(.unavailable, mentioning: ["still building"]) {
            _ = try h.engine.readQuery(p("/posts"), Query(order: .child(p(building.on))))
        }
        for i in stride(from: 0, to: 120, by: 9) {
            try await h.set("/posts/p\(i)/score", .number(Double(100 - i)))
            try await h.remove("/posts/p\(119 - i)")
            try await h.push("/posts", json(#"{"score": 3}"#))
        }
        try await h.update("/posts", [("p1/metrics/views", .number(-1)), ("p118", .number(5))])
        options.indexBuildPauseMilliseconds = 20
        try h.reopen(options: options)
        try await h.set("/posts/p2/score", .string("after restart"))
        // `query` waits for the build (up to 5 s; at most 2.4 s are left) instead of refusing.
        try await h.expectSame(p("/posts"), Query(order: .child(p(building.on)), limit: .first(5)), "a query waiting for the build")
        try await h.engine.waitForIndexes()
        #expect(h.engine.indexStatus().allSatisfy { $0.state == .ready })
        try await h.checkAll("after the online build")
    }
}
