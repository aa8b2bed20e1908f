// JSON output as Firebase answers reads: array rendering, number form, key order, escaping,
// pretty printing, and parse(write(v)) == v.

import EddyModel
import EddyTesting
import Testing

@Suite struct JSONWriterTests {
    static func object(_ pairs: KeyValuePairs<String, Value>) -> Value {
        .object(Dictionary(uniqueKeysWithValues: pairs.map { ($0.key, $0.value) }))
    }

    @Test func arrayRenderingRuleFromTheReference() {
        #expect(JSONWriter.string(Self.object(["0": .string("a"), "2": .string("c")])) == #"["a",null,"c"]"#)
        #expect(JSONWriter.string(Self.object(["0": .string("a"), "5": .string("f")])) == #"{"0":"a","5":"f"}"#)
    }

    @Test(arguments: [
        (["0": Value.bool(true), "1": .bool(false)], "[true,false]"),
        (["1": .string("b")], #"[null,"b"]"#),  // largest key 1 < 2 x 1
        (["2": .string("c")], #"{"2":"c"}"#),  // largest key 2 is not < 2 x 1
        (["0": .number(0), "1": .number(1), "3": .number(3)], "[0,1,null,3]"),  // 3 < 6
        (["0": .number(0), "6": .number(6), "5": .number(5)], #"{"0":0,"5":5,"6":6}"#),  // 6 is not < 6
        (["0": .number(0), "01": .number(1)], #"{"0":0,"01":1}"#),  // "01" is not an array index
        (["0": .number(0), "-1": .number(1)], #"{"-1":1,"0":0}"#),
        (["0": .number(0), "a": .number(1)], #"{"0":0,"a":1}"#),
        (["10": .number(0), "9": .number(1), "8": .number(2), "7": .number(3), "6": .number(4), "5": .number(5)],
         "[null,null,null,null,null,5,4,3,2,1,0]"),  // 10 < 12
    ] as [([String: Value], String)])
    func arrayRendering(children: [String: Value], expected: String) {
        #expect(JSONWriter.string(.object(children)) == expected)
    }

    @Test func nestedArraysRender() {
        let value = Self.object(["0": Self.object(["0": .number(1), "1": .number(2)]), "1": Self.object(["x": .bool(true)])])
        #expect(JSONWriter.string(value) == #"[[1,2],{"x":true}]"#)
    }

    @Test(arguments: [
        (0.0, "0"), (-0.0, "0"), (1.0, "1"), (-1.0, "-1"), (42.0, "42"), (1.5, "1.5"), (-0.25, "-0.25"),
        (9_007_199_254_740_991.0, "9007199254740991"), (-9_007_199_254_740_991.0, "-9007199254740991"),
        (2_147_483_648.0, "2147483648"), (0.1, "0.1"), (9_007_199_254_740_992.0, "9007199254740992"),
        (-9_007_199_254_740_992.0, "-9007199254740992"),
    ] as [(Double, String)])
    func numbers(value: Double, expected: String) {
        #expect(JSONWriter.string(.number(value)) == expected)
    }

    @Test(arguments: [
        9_007_199_254_740_994.0, 1e20, 1e300, -1e300, Double.greatestFiniteMagnitude, Double.leastNonzeroMagnitude,
        1e-7, 123.456, -Double.leastNonzeroMagnitude, 0.30000000000000004,
    ])
    func otherNumbersRoundTrip(value: Double) throws {
        let text = JSONWriter.string(.number(value))
        #expect(!text.hasSuffix(".0"), "integral numbers never print a fraction: \(text)")
        #expect(try JSONParser.parse(text) == .number(value), "\(text)")
    }

    @Test func randomNumbersRoundTripWithoutATrailingFraction() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<propertyIterations {
            let n = RandomValues.number(&g)
            let text = JSONWriter.string(.number(n))
            let back = try JSONParser.parse(text)
            #expect(!text.hasSuffix(".0"), Comment("seed \(seed): \(text)"))
            #expect(back == .number(n), Comment("seed \(seed): \(text)"))
            if text.hasSuffix(".0") || back != .number(n) { return }
        }
        for power in 50...70 {
            let n = Double(sign: .plus, exponent: power, significand: 1)
            #expect(!JSONWriter.string(.number(n)).hasSuffix(".0"), "2^\(power)")
            #expect(!JSONWriter.string(.number(-n)).hasSuffix(".0"), "-2^\(power)")
        }
    }

    @Test func keysAreInFirebaseOrder() {
        let value = Self.object([
            "b": .number(1), "a": .number(2), "10": .number(3), "2": .number(4), "-": .number(5), "\u{FF61}": .number(6),
            "\u{1F600}": .number(7), "01": .number(8),
        ])
        #expect(JSONWriter.string(value) == "{\"01\":8,\"2\":4,\"10\":3,\"-\":5,\"a\":2,\"b\":1,\"\u{1F600}\":7,\"\u{FF61}\":6}")
    }

    @Test func stringsAreEscaped() {
        let value = Value.string("q\"b\\n\nr\rt\tb\u{8}f\u{C}nul\u{0}c\u{1F}d\u{7F}/\u{E9}\u{1F600}")
        #expect(
            JSONWriter.string(value)
                == #""q\"b\\n\nr\rt\tb\u0008f\u000cnul\u0000c\u001fd\u007f/"# + "\u{E9}\u{1F600}\"")
        #expect(JSONWriter.string(Self.object(["k\"": .bool(true)])) == #"{"k\"":true}"#)
    }

    @Test func primitives() {
        #expect(JSONWriter.string(.null) == "null")
        #expect(JSONWriter.string(.bool(true)) == "true")
        #expect(JSONWriter.string(.bool(false)) == "false")
        #expect(JSONWriter.string(.string("")) == #""""#)
        #expect(JSONWriter.bytes(.string("\u{E9}")) == [0x22, 0xC3, 0xA9, 0x22])
    }

    /// Firebase's `print=pretty` layout (Jackson's default pretty printer).
    @Test func pretty() {
        let value = Self.object(["b": Self.object(["0": .bool(true), "1": .bool(false)]), "a": .number(1), "c": Self.object(["x": .string("y")])])
        let expected = """
            {
              "a" : 1,
              "b" : [ true, false ],
              "c" : {
                "x" : "y"
              }
            }
            """
        #expect(JSONWriter.string(value, pretty: true) == expected)
        #expect(JSONWriter.string(.number(3), pretty: true) == "3")
        // An object inside an array breaks lines, indented by the objects around it only.
        let list = Self.object(["l": Self.object(["0": Self.object(["n": .number(1)]), "1": .string("s")])])
        let listed = """
            {
              "l" : [ {
                "n" : 1
              }, "s" ]
            }
            """
        #expect(JSONWriter.string(list, pretty: true) == listed)
    }

    @Test func exportFormatNeverRendersArrays() {
        let value = Self.object(["l": Self.object(["0": .string("a"), "1": .string("b")])])
        #expect(JSONWriter.string(value) == #"{"l":["a","b"]}"#)
        #expect(String(decoding: JSONWriter.bytes(value, arrays: false), as: UTF8.self) == #"{"l":{"0":"a","1":"b"}}"#)
    }

    @Test func parseOfWriteIsTheIdentityOnNormalizedValues() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<propertyIterations {
            let value = RandomValues.value(&g, depthMax: 3, widthMax: 5)
            let text = JSONWriter.string(value)
            let back = try JSONParser.parse(text).normalized()
            #expect(back == value, Comment("seed \(seed): \(text)"))
            #expect(try JSONParser.parse(JSONWriter.string(value, pretty: true)).normalized() == value, Comment("seed \(seed)"))
            if back != value { return }
        }
    }
}

@Suite struct RenderMembersTests {
    @Test func membersRenderLikeTheValueTheyCameFrom() throws {
        let cases: [Value] = [
            .null,
            try JSONParser.parse(#"{"b": {"x": 1}, "a": "s\"q"}"#).normalized(),
            try JSONParser.parse(#"{"0": 1, "1": {"k": [1, 2]}, "3": true}"#).normalized(),  // array with a hole
            try JSONParser.parse(#"{"0": 1, "5": 2}"#).normalized(),  // too sparse: an object
            try JSONParser.parse(#"{"01": 1, "1": 2}"#).normalized(),  // "01" is no array index
        ]
        for value in cases {
            let members: [(key: String, json: [UInt8])] = value.objectMembers.reversed().map { ($0.key, JSONWriter.bytes($0.value)) }
            let rendered = JSONWriter.renderMembers(members)
            #expect(try JSONParser.parse(rendered).normalized() == value, "\(String(decoding: rendered, as: UTF8.self))")
            if case .object(let children) = value, JSONWriter.arrayElements(children) != nil {
                #expect(rendered == JSONWriter.bytes(value), "arrays render identically")
            }
        }
    }
}

extension Value {
    fileprivate var objectMembers: [(key: String, value: Value)] {
        guard case .object(let children) = self else { return [] }
        return children.sorted { Key.lessThan($0.key, $1.key) }.map { ($0.key, $0.value) }
    }
}

@Suite struct SortedKeysTests {
    @Test func sortedKeysIsFirebaseKeyOrder() {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<200 {
            var children: [String: Value] = [:]
            for _ in 0..<g.int(in: 1...12) {
                let key = g.chance(1, in: 3) ? RandomValues.randomIntegerKey(&g) : RandomValues.key(&g)
                children[key] = .bool(true)
            }
            let expected = children.keys.sorted(by: Key.lessThan)
            #expect(JSONWriter.sortedKeys(children) == expected, Comment("seed \(seed)"))
        }
    }
}
