// The strict JSON parser: valid documents, arrays stored as objects, surrogate pairs, UTF-8
// validation, trailing data, non-finite numbers, the nesting limit and error offsets.

import EddyModel
import EddyTesting
import Testing

@Suite struct JSONParserTests {
    @Test func parsesAValidDocument() throws {
        let value = try JSONParser.parse(#" { "a" : 1, "b": [true, false, null], "c": "x\u00e9", "d": -1.5e2, "e": {} } "#)
        #expect(
            value
                == .object([
                    "a": .number(1),
                    "b": .object(["0": .bool(true), "1": .bool(false), "2": .null]),
                    "c": .string("x\u{E9}"),
                    "d": .number(-150),
                    "e": .object([:]),
                ]))
    }

    @Test(arguments: [
        ("true", Value.bool(true)), ("false", .bool(false)), ("null", .null), ("0", .number(0)), ("-0", .number(-0.0)),
        ("1E2", .number(100)), ("1e+2", .number(100)), ("25e-1", .number(2.5)), ("0.125", .number(0.125)),
        ("\"\"", .string("")), ("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", .string("a\"b\\c/d\u{8}\u{C}\n\r\t")),
        ("\"\\u0000\"", .string("\u{0}")), ("\"\\u20AC\\u20ac\"", .string("\u{20AC}\u{20AC}")),
        ("\"\u{1F600}\"", .string("\u{1F600}")), (" \t\r\n7\n", .number(7)),
        ("123456789012345678901234567890", .number(1.2345678901234568e29)),
    ])
    func parsesTopLevelValues(text: String, expected: Value) throws {
        #expect(try JSONParser.parse(text) == expected)
    }

    @Test func negativeZeroKeepsItsSign() throws {
        guard case .number(let n) = try JSONParser.parse("-0.0") else {
            Issue.record("not a number")
            return
        }
        #expect(n == 0 && n.sign == .minus)
    }

    @Test func arraysBecomeObjectsKeyedByIndex() throws {
        #expect(try JSONParser.parse(#"["a","b"]"#) == .object(["0": .string("a"), "1": .string("b")]))
        #expect(try JSONParser.parse("[]") == .object([:]))
        #expect(try JSONParser.parse("[null, 1]") == .object(["0": .null, "1": .number(1)]))
        #expect(try JSONParser.parse("[[1],{\"x\":[2]}]") == .object([
            "0": .object(["0": .number(1)]), "1": .object(["x": .object(["0": .number(2)])]),
        ]))
    }

    @Test func duplicateKeysKeepTheLast() throws {
        #expect(try JSONParser.parse(#"{"a":1,"a":2}"#) == .object(["a": .number(2)]))
    }

    @Test func surrogatePairsAreJoined() throws {
        #expect(try JSONParser.parse(#""\uD83D\uDE00""#) == .string("\u{1F600}"))
        #expect(try JSONParser.parse(#""x\ud83d\ude00y""#) == .string("x\u{1F600}y"))
        #expect(try JSONParser.parse(#""\uDBFF\uDFFF""#) == .string("\u{10FFFF}"))
        #expect(try JSONParser.parse(#""\uD800\uDC00""#) == .string("\u{10000}"))
    }

    @Test(arguments: [#""\uD83D""#, #""\uD83Dx""#, #""\uDE00""#, #""\uD83D\u0041""#, #""\uD83D\n""#, #""a\uDFFFb""#])
    func loneSurrogateIsRefused(text: String) {
        expectEddyErrorSync(.invalidJSON, mentioning: ["at byte", "surrogate"]) { _ = try JSONParser.parse(text) }
    }

    @Test(arguments: [
        [0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xE2, 0x82, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22],
        [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0x80, 0x22], [0x22, 0x5C, 0x6E, 0xFF, 0x22],
        [0x7B, 0x22, 0xFE, 0x22, 0x3A, 0x31, 0x7D],
    ] as [[UInt8]])
    func invalidUTF8IsRefused(bytes: [UInt8]) {
        expectEddyErrorSync(.invalidJSON, mentioning: ["invalid UTF-8", "byte"]) { _ = try JSONParser.parse(bytes) }
    }

    @Test(arguments: [("1 2", 2), ("{} x", 3), ("truex", 4), ("\"a\"\"b\"", 3), ("[1]]", 3), ("null,", 4)])
    func trailingDataIsRefused(text: String, offset: Int) {
        expectEddyErrorSync(.invalidJSON, mentioning: ["at byte \(offset)", "after the JSON value"]) {
            _ = try JSONParser.parse(text)
        }
    }

    @Test(arguments: ["NaN", "-NaN", "Infinity", "-Infinity", "nan"])
    func nonFiniteLiteralsAreRefused(text: String) {
        expectEddyErrorSync(.invalidJSON, mentioning: ["at byte"]) { _ = try JSONParser.parse(text) }
    }

    @Test(arguments: ["1e999", "-1e999", "[1e400]", "{\"a\":123e45678}"])
    func overflowingNumbersAreRefused(text: String) {
        expectEddyErrorSync(.invalidValue, mentioning: ["not finite"]) { _ = try JSONParser.parse(text) }
    }

    @Test(arguments: [
        ("", 0), (" ", 1), ("01", 2), ("1.", 2), (".5", 0), ("+1", 0), ("-", 1), ("1e", 2), ("tru", 0), ("nul", 0),
        ("[1,]", 3), ("{,}", 1), ("{\"a\":}", 5), ("{\"a\" 1}", 5), ("{a:1}", 1), ("'a'", 0), ("\"a", 2),
        ("\"\\x\"", 3), ("\"\\u12G4\"", 5), ("[1 2]", 3), ("{\"a\":1 \"b\":2}", 7),
    ])
    func malformedDocumentsNameTheByteOffset(text: String, offset: Int) {
        expectEddyErrorSync(.invalidJSON, mentioning: ["invalid JSON at byte \(offset)"]) { _ = try JSONParser.parse(text) }
    }

    @Test func unescapedControlCharacterInStringIsRefused() {
        expectEddyErrorSync(.invalidJSON, mentioning: ["at byte 2", "control character"]) { _ = try JSONParser.parse("\"a\u{1}\"") }
        expectEddyErrorSync(.invalidJSON, mentioning: ["control character"]) { _ = try JSONParser.parse("\"\\n\n\"") }
    }

    @Test func nestingIsBoundedByJSONDepthMax() throws {
        let depth = Limits.jsonDepthMax
        let arrays = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        _ = try JSONParser.parse(arrays)
        let objects = String(repeating: "{\"a\":", count: depth) + "1" + String(repeating: "}", count: depth)
        #expect(try JSONParser.parse(objects).leafCount == 1)
        let tooDeep = "[" + arrays + "]"
        expectEddyErrorSync(.invalidJSON, mentioning: ["deeper than \(depth)"]) { _ = try JSONParser.parse(tooDeep) }
        let tooDeepObjects = "{\"a\":" + objects + "}"
        expectEddyErrorSync(.invalidJSON, mentioning: ["deeper than \(depth)"]) { _ = try JSONParser.parse(tooDeepObjects) }
        // Far beyond the limit fails the same way instead of overflowing the stack.
        let huge = String(repeating: "[", count: 100_000)
        expectEddyErrorSync(.invalidJSON, mentioning: ["deeper than"]) { _ = try JSONParser.parse(huge) }
    }
}
