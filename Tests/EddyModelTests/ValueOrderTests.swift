// Firebase value order (orderByChild / orderByValue) with the key tie-break, FIREBASE_REFERENCE §2.2.

import EddyModel
import Testing

@Suite struct ValueOrderTests {
    @Test func orderByChildExampleFromTheReference() throws {
        let data = try JSONParser.parse(
            #"{"a":{"h":3},"b":{"h":"x"},"c":{"x":1},"d":{"h":true},"e":{"h":false},"f":{"h":{"k":1}},"g":{"h":1.5}}"#)
        guard case .object(let children) = data else {
            Issue.record("not an object")
            return
        }
        let h = try Path("h")
        let sorted = children.keys.sorted { a, b in
            ValueOrder.compare(children[a]!.child(at: h), key: a, children[b]!.child(at: h), key: b) < 0
        }
        #expect(sorted == ["c", "e", "d", "g", "a", "b", "f"])
    }

    @Test func ranksNullFalseTrueNumbersStringsObjects() {
        let ascending: [Value] = [
            .null, .bool(false), .bool(true), .number(-10), .number(0), .number(2.5), .string(""), .string("A"), .string("a"),
            .object(["z": .number(1)]),
        ]
        for (i, a) in ascending.enumerated() {
            for (j, b) in ascending.enumerated() {
                #expect(sign(ValueOrder.compare(a, b)) == sign(i - j), "\(a) vs \(b)")
            }
        }
    }

    @Test func tiesBreakByKey() {
        #expect(ValueOrder.compare(.number(1), key: "b", .number(1), key: "a") > 0)
        #expect(ValueOrder.compare(.number(1), key: "10", .number(1), key: "9") > 0)
        #expect(ValueOrder.compare(.number(0), key: "a", .number(-0.0), key: "b") < 0)
        #expect(ValueOrder.compare(.object(["x": .number(1)]), key: "2", .object(["y": .number(0)]), key: "1") > 0)
        #expect(ValueOrder.compare(.null, key: "z", .bool(false), key: "a") < 0)
        #expect(ValueOrder.compare(.string("a"), key: "k", .string("a"), key: "k") == 0)
    }

    @Test func stringsCompareInUTF16Order() {
        #expect(ValueOrder.compare(.string("\u{1F600}"), .string("\u{FF61}")) < 0)
        #expect(ValueOrder.compare(.string("B"), .string("a")) < 0)
        #expect(ValueOrder.compare(.string("10"), .string("9")) < 0)  // values never sort numerically as strings
        #expect(ValueOrder.compare(.number(10), .number(9)) > 0)
        #expect(ValueOrder.compare(.number(-0.0), .number(0)) == 0)
    }
}
