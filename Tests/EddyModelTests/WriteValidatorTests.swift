// Write validation: each rule refused with a message naming the key, path or limit; nulls and
// empty objects normalized away; server values accepted or refused.

import EddyModel
import EddyTesting
import Testing

@Suite struct WriteValidatorTests {
    static let base = try! Path("users/alice")

    @Test func validValueIsReturnedNormalized() throws {
        let value = try JSONParser.parse(#"{"name":"Alice","age":30,"tags":["a","b"],"gone":null,"empty":{},"deep":{"x":{"y":null}}}"#)
        let normalized = try WriteValidator.validate(value, at: Self.base)
        #expect(normalized == (try JSONParser.parse(#"{"name":"Alice","age":30,"tags":["a","b"]}"#)))
    }

    @Test(arguments: ["{}", "null", #"{"a":null}"#, #"{"a":{}}"#, #"{"a":{"b":{"c":null}},"d":[]}"#, "[]", "[null]"])
    func emptyObjectsAndNestedNullsNormalizeToNull(text: String) throws {
        #expect(try WriteValidator.validate(JSONParser.parse(text), at: Self.base) == .null)
    }

    @Test func primitivesPassThrough() throws {
        for value in [Value.bool(true), .number(-0.5), .string("x"), .string("")] {
            #expect(try WriteValidator.validate(value, at: Self.base) == value)
        }
        #expect(try WriteValidator.validate(.number(1), at: .root) == .number(1))
    }

    @Test(arguments: [".", "$", "#", "[", "]", "/", "\u{0}", "\u{1F}", "\u{7F}"])
    func invalidKeyIsRefusedNamingKeyAndPath(character: String) {
        let value = Value.object(["ok": .object(["bad\(character)key": .number(1)])])
        expectEddyErrorSync(.invalidKey, mentioning: ["bad", "in path \"/users/alice/ok\""]) {
            _ = try WriteValidator.validate(value, at: Self.base)
        }
    }

    @Test func invalidKeyUnderANullIsStillRefused() {
        // Firebase validates the whole object, even parts that would be pruned.
        expectEddyErrorSync(.invalidKey, mentioning: ["a.b"]) {
            _ = try WriteValidator.validate(.object(["a.b": .null]), at: Self.base)
        }
    }

    @Test func emptyKeyIsRefused() {
        expectEddyErrorSync(.invalidKey, mentioning: ["empty key", "/users/alice"]) {
            _ = try WriteValidator.validate(.object(["": .number(1)]), at: Self.base)
        }
    }

    @Test func overlongKeyIsRefused() {
        let key = String(repeating: "k", count: Limits.keyBytesMax + 1)
        expectEddyErrorSync(.invalidKey, mentioning: ["keyBytesMax is \(Limits.keyBytesMax)"]) {
            _ = try WriteValidator.validate(.object([key: .number(1)]), at: .root)
        }
    }

    static func nested(_ keys: [String], _ leaf: Value) -> Value {
        keys.reversed().reduce(leaf) { .object([$1: $0]) }
    }

    @Test func leafDepthIsBoundedByPathDepthMax() throws {
        let base = Path(validatedKeys: (0..<30).map { "b\($0)" })
        _ = try WriteValidator.validate(Self.nested(["x", "y"], .number(1)), at: base)  // leaf at depth 32
        expectEddyErrorSync(.invalidPath, mentioning: ["33 keys deep", "pathDepthMax is 32"]) {
            _ = try WriteValidator.validate(Self.nested(["x", "y", "z"], .number(1)), at: base)
        }
        // A server value is a leaf too.
        expectEddyErrorSync(.invalidPath, mentioning: ["pathDepthMax"]) {
            _ = try WriteValidator.validate(Self.nested(["x", "y", "z"], .object([".sv": .string("timestamp")])), at: base)
        }
    }

    @Test func longKeysNestDownToTheDepthLimitWhateverThePathsLength() throws {
        let key = String(repeating: "b", count: 768)
        let base = Path(validatedKeys: [String(repeating: "a", count: 768)])
        _ = try WriteValidator.validate(Self.nested(Array(repeating: key, count: 31), .bool(true)), at: base)  // 32 keys, 24,607 bytes
        expectEddyErrorSync(.invalidPath, mentioning: ["33 keys deep", "pathDepthMax is 32"]) {
            _ = try WriteValidator.validate(Self.nested(Array(repeating: key, count: 32), .bool(true)), at: base)
        }
        expectEddyErrorSync(.invalidKey, mentioning: ["769 bytes", "keyBytesMax is 768"]) {
            _ = try WriteValidator.validate(.object([key + "c": .bool(true)]), at: base)
        }
    }

    @Test func baseLocationIsChecked() {
        let deep = Path(validatedKeys: Array(repeating: "a", count: 33))
        expectEddyErrorSync(.invalidPath, mentioning: ["pathDepthMax"]) { _ = try WriteValidator.validate(.null, at: deep) }
        expectEddyErrorSync(.invalidPath, mentioning: ["pathDepthMax"]) { try WriteValidator.validateLocation(deep) }
    }

    @Test func stringsAreBoundedByStringBytesMax() throws {
        let fits = String(repeating: "s", count: Limits.stringBytesMax)
        #expect(try WriteValidator.validate(.string(fits), at: Self.base) == .string(fits))
        expectEddyErrorSync(.limitExceeded, mentioning: ["/users/alice/big", "\(Limits.stringBytesMax + 1) bytes", "stringBytesMax"]) {
            _ = try WriteValidator.validate(.object(["big": .string(fits + "s")]), at: Self.base)
        }
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity, .signalingNaN])
    func nonFiniteNumbersAreRefused(number: Double) {
        expectEddyErrorSync(.invalidValue, mentioning: ["/users/alice/n", "not finite"]) {
            _ = try WriteValidator.validate(.object(["n": .number(number)]), at: Self.base)
        }
    }

    @Test(arguments: [
        // Priorities stay in the export form; a node empty but for its priority is null.
        (#"{".priority":1}"#, "null"),
        (#"{"a":1,".priority":"p"}"#, #"{".priority":"p","a":1}"#),
        (#"{".value":1,".priority":2}"#, #"{".priority":2,".value":1}"#),
        (#"{".value":{"k":1},".priority":2}"#, #"{".priority":2,"k":1}"#),
        (#"{"x":{"y":null,".priority":2},"z":1}"#, #"{"z":1}"#),
        (#"{"t":{".value":1,".priority":{".sv":"timestamp"}}}"#, #"{"t":{".priority":{".sv":"timestamp"},".value":1}}"#),
        (#"{"t":{".value":1,".priority":{".sv":{"increment":1}}}}"#, #"{"t":{".priority":{".sv":{"increment":1}},".value":1}}"#),
    ])
    func prioritiesAreKeptInTheExportForm(text: String, normalized: String) throws {
        let value = try WriteValidator.validate(try JSONParser.parse(text), at: Self.base)
        #expect(JSONWriter.string(value) == normalized)
    }

    @Test(arguments: [
        (#"{"a":1,".priority":true}"#, "/users/alice"), (#"{"x":{".value":"v",".priority":{"a":1}}}"#, "/users/alice/x"),
    ])
    func aPriorityThatIsNotANumberOrAStringIsRefused(text: String, path: String) throws {
        let value = try JSONParser.parse(text)
        expectEddyErrorSync(.invalidValue, mentioning: ["priority of \(path)", "a number, a string", "not "]) {
            _ = try WriteValidator.validate(value, at: Self.base)
        }
    }

    @Test(arguments: [
        // Firebase's wrapper forms, as its SDKs read them: `.value` is the value, a null
        // priority is none.
        (#"{".value":1}"#, "1"),
        (#"{".value":"s",".priority":null}"#, #""s""#),
        (#"{"a":{".value":true},"b":2}"#, #"{"a":true,"b":2}"#),
        (#"{"a":1,".priority":null}"#, #"{"a":1}"#),
        (#"{".priority":null}"#, "null"),
        (#"{".value":null}"#, "null"),
        (#"{".value":{"x":{".value":3}}}"#, #"{"x":3}"#),
        (#"{"t":{".value":{".sv":"timestamp"}}}"#, #"{"t":{".sv":"timestamp"}}"#),
        (#"{"a":{".value":null},"b":1}"#, #"{"b":1}"#),
    ])
    func wrappedValuesAndNullPrioritiesAreUnwrapped(text: String, expected: String) throws {
        #expect(try WriteValidator.validate(JSONParser.parse(text), at: Self.base) == (try JSONParser.parse(expected)))
    }

    @Test func aWrappedValueBesideOtherKeysIsRefused() throws {
        let value = try JSONParser.parse(#"{"x":{".value":1,"other":2}}"#)
        expectEddyErrorSync(.invalidValue, mentioning: ["/users/alice/x", "\".value\" and other keys"]) {
            _ = try WriteValidator.validate(value, at: Self.base)
        }
    }

    @Test func keysInsideAWrappedValueAreStillChecked() throws {
        let value = try JSONParser.parse(#"{".value":{"a.b":1}}"#)
        expectEddyErrorSync(.invalidKey, mentioning: ["a.b"]) {
            _ = try WriteValidator.validate(value, at: Self.base)
        }
    }

    @Test func serverValuesAreAccepted() throws {
        let timestamp = Value.object([".sv": .string("timestamp")])
        #expect(try WriteValidator.validate(timestamp, at: Self.base) == timestamp)
        #expect(WriteValidator.serverValue(timestamp) == .timestamp)
        let increment = Value.object([".sv": .object(["increment": .number(-2.5)])])
        #expect(try WriteValidator.validate(increment, at: Self.base) == increment)
        #expect(WriteValidator.serverValue(increment) == .increment(.number(-2.5)))
        let nested = Value.object(["at": timestamp, "count": increment, "n": .number(1)])
        #expect(try WriteValidator.validate(nested, at: Self.base) == nested)
        #expect(try WriteValidator.validate(try JSONParser.parse(#"{".sv":"timestamp"}"#), at: .root) == timestamp)
    }

    @Test func serverValueOfPlainValuesIsNil() {
        #expect(WriteValidator.serverValue(.number(1)) == nil)
        #expect(WriteValidator.serverValue(.object(["a": .number(1)])) == nil)
        #expect(WriteValidator.serverValue(.null) == nil)
    }

    @Test(arguments: [
        #"{".sv":"now"}"#, #"{".sv":5}"#, #"{".sv":true}"#, #"{".sv":null}"#, #"{".sv":{"increment":"1"}}"#,
        #"{".sv":{"increment":1,"x":2}}"#, #"{".sv":{"add":1}}"#, #"{".sv":{}}"#, #"{".sv":"timestamp","a":1}"#,
        #"{"x":{".sv":"TIMESTAMP"}}"#,
    ])
    func malformedServerValuesAreRefused(text: String) throws {
        let value = try JSONParser.parse(text)
        expectEddyErrorSync(.invalidValue, mentioning: ["server value at /users/alice"]) {
            _ = try WriteValidator.validate(value, at: Self.base)
        }
    }

    @Test func nonFiniteIncrementIsRefused() {
        let value = Value.object([".sv": .object(["increment": .number(.infinity)])])
        expectEddyErrorSync(.invalidValue, mentioning: ["increment"]) { _ = try WriteValidator.validate(value, at: Self.base) }
    }

    @Test func randomValidValuesValidateToTheirNormalForm() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<propertyIterations {
            let raw = RandomValues.value(&g, normalized: false)
            let base = RandomValues.path(&g, depthMax: 1)  // with value depth 3, leaf paths stay within pathDepthMax
            let result = try WriteValidator.validate(raw, at: base)
            #expect(result == raw.normalized(), Comment("seed \(seed): \(raw)"))
        }
    }
}
