// Key validation (Firebase's key rules) and key order (`nameCompare`), FIREBASE_REFERENCE §1, §2.1.

import EddyModel
import EddyTesting
import Testing

@Suite struct KeyTests {
    // MARK: Validation

    @Test(arguments: [
        "a", "-", "_", "+1", " 1", "a b", "key-_~!@%^&*()", "\u{E9}t\u{E9}", "\u{1F600}", "\u{FF61}", "\u{E000}",
        "\u{10FFFF}", "\u{80}", "0", "-2147483649",
    ])
    func validKeysAreAccepted(key: String) throws {
        try Key.validate(key)
    }

    @Test func emptyKeyIsRefused() {
        expectEddyErrorSync(.invalidKey, mentioning: ["empty key", "non-empty"]) { try Key.validate("") }
        expectEddyErrorSync(.invalidKey, mentioning: ["empty key", "in path \"a/b\""]) { try Key.validate("", inPath: "a/b") }
    }

    @Test(arguments: [".", "$", "#", "[", "]", "/"])
    func forbiddenCharacterIsRefused(character: String) {
        for key in [character, "a\(character)b", "abc\(character)", "\(character)xyz"] {
            expectEddyErrorSync(.invalidKey, mentioning: ["key \"\(key)\"", "contains \"\(character)\""]) {
                try Key.validate(key)
            }
        }
        expectEddyErrorSync(.invalidKey, mentioning: ["a\(character)b", "in path \"/x/y\""]) {
            try Key.validate("a\(character)b", inPath: "/x/y")
        }
    }

    @Test(arguments: Array(UInt8(0x00)...UInt8(0x1F)) + [0x7F])
    func controlCharacterIsRefused(byte: UInt8) {
        let key = "a" + String(Character(Unicode.Scalar(byte))) + "b"
        let hexUpper = String(byte, radix: 16, uppercase: true)
        let hexLower = String(byte, radix: 16)
        let escaped = "a\\u" + String(repeating: "0", count: 4 - hexLower.count) + hexLower + "b"
        expectEddyErrorSync(.invalidKey, mentioning: ["control character 0x\(hexUpper)", "key \"\(escaped)\""]) {
            try Key.validate(key)
        }
    }

    @Test func keyOf768BytesIsAcceptedAnd769Refused() throws {
        try Key.validate(String(repeating: "a", count: 768))
        try Key.validate(String(repeating: "\u{4E2D}", count: 256))  // 3 bytes each
        try Key.validate(String(repeating: "\u{1F600}", count: 192))  // 4 bytes each
        let long = String(repeating: "k", count: 769)
        expectEddyErrorSync(.invalidKey, mentioning: ["is 769 bytes", "keyBytesMax is 768", String(repeating: "k", count: 80)]) {
            try Key.validate(long)
        }
        expectEddyErrorSync(.invalidKey, mentioning: ["is 769 bytes", "keyBytesMax"]) {
            try Key.validate(String(repeating: "\u{1F600}", count: 192) + "a")
        }
    }

    @Test func longKeyIsAbbreviatedInMessages() throws {
        let key = String(repeating: "x", count: 200) + "."
        let error = try #require(expectEddyErrorSync(.invalidKey, mentioning: ["contains \".\""]) {
            try Key.validate(key)
        })
        #expect(error.message.contains(String(repeating: "x", count: 80) + "…"))
        #expect(!error.message.contains(String(repeating: "x", count: 81)))
    }

    // MARK: Integer-like keys

    @Test(arguments: [
        ("-1", -1), ("01", 1), ("007", 7), ("-0", 0), ("0000000000005", 5), ("0", 0), ("2147483647", 2_147_483_647),
        ("-2147483648", -2_147_483_648), ("00000000000", 0), ("-01", -1), ("0002147483647", 2_147_483_647),
    ] as [(String, Int32)])
    func integerLikeKeys(key: String, value: Int32) {
        #expect(Key.integerValue(key) == value)
    }

    @Test(arguments: [
        "+1", " 1", "1 ", "1.0", "2147483648", "-2147483649", "12345678901", "-", "", "--1", "1e5", "0x1", "a1",
        "\u{661}", "\u{FF11}", "99999999999",
    ])
    func stringKeysAreNotIntegerLike(key: String) {
        #expect(Key.integerValue(key) == nil)
    }

    // MARK: Order

    @Test func sortedExampleFromTheReference() {
        let sorted = ["-1", "0", "1", "01", "001", "2", "10", "2147483647", "-", "2147483648", "A", "a", "b"]
        for (a, b) in zip(sorted, sorted.dropFirst()) {
            #expect(Key.compare(a, b) < 0, "\(a) < \(b)")
            #expect(Key.compare(b, a) > 0, "\(b) > \(a)")
        }
        var g = SeededGenerator(seed: 7)
        for _ in 0..<20 {
            #expect(sorted.shuffled(using: &g).sorted(by: Key.lessThan) == sorted)
        }
    }

    @Test func utf16OrderPutsSupplementaryCharactersBeforeTheTopOfTheBMP() {
        #expect(Key.compare("\u{1F600}", "\u{FF61}") < 0)
        #expect(Key.compare("\u{1F600}", "\u{E000}") < 0)
        #expect(Key.compare("\u{10FFFF}", "\u{FFFF}") < 0)
        #expect(Key.compare("\u{D7FF}", "\u{10000}") < 0)
        #expect(Key.compare("a\u{1F600}", "a\u{FF61}") < 0)
        #expect(Key.compareUTF16Order("\u{FF61}", "\u{1F600}") > 0)
        // Plain code-point order would say the opposite.
        #expect("\u{1F600}".unicodeScalars.first!.value > "\u{FF61}".unicodeScalars.first!.value)
    }

    @Test func integerLikeTiesBreakByLengthThenBytes() {
        #expect(Key.compare("0", "-0") < 0)
        #expect(Key.compare("-0", "00") < 0)  // equal value and length: bytes, so the order is total
        #expect(Key.compare("5", "05") < 0)
        #expect(Key.compare("05", "0000000000005") < 0)
        #expect(Key.compare("0000000000005", "6") < 0)  // 5 < 6: value before length
        #expect(Key.compare("-2147483648", "-1") < 0)
        #expect(Key.compare("2147483647", "-") < 0)
        #expect(Key.compare("a", "a") == 0)
        #expect(Key.compare("", "a") < 0)
        #expect(Key.compare("a", "ab") < 0)
    }

    /// Firebase's `nameCompare`, written from FIREBASE_REFERENCE §2.1 independently of `Key`:
    /// the JS regex, `Number()` range check, value then length, then UTF-16 order.
    static func referenceCompare(_ a: String, _ b: String) -> Int {
        func integer(_ key: String) -> Int64? {
            guard key.wholeMatch(of: try! Regex("-?0*[0-9]{1,10}")) != nil, let value = Int64(key) else { return nil }
            return (Int64(Int32.min)...Int64(Int32.max)).contains(value) ? value : nil
        }
        switch (integer(a), integer(b)) {
        case (let x?, let y?):
            if x != y { return x < y ? -1 : 1 }
            if a.utf16.count != b.utf16.count { return a.utf16.count < b.utf16.count ? -1 : 1 }
            return compareUTF16Reference(a, b)
        case (.some, .none): return -1
        case (.none, .some): return 1
        case (.none, .none): return compareUTF16Reference(a, b)
        }
    }

    @Test func compareMatchesTheReferenceOnRandomKeys() {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<propertyIterations {
            let a = RandomValues.key(&g)
            let b = g.chance(1, in: 10) ? a : RandomValues.key(&g)
            let c = Key.compare(a, b)
            guard sign(c) == Self.referenceCompare(a, b), sign(Key.compare(b, a)) == -sign(c), (c == 0) == (a == b) else {
                Issue.record(Comment("seed \(seed): Key.compare(\(a.debugDescription), \(b.debugDescription)) = \(c)"))
                return
            }
        }
    }

    @Test func utf16OrderMatchesTheStandardLibraryOnRandomStrings() {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        let characters = RandomValues.keyCharacters + RandomValues.valueOnlyCharacters
        for _ in 0..<propertyIterations {
            let a = RandomValues.string(&g, length: g.int(in: 0...4), characters: characters)
            let b = RandomValues.string(&g, length: g.int(in: 0...4), characters: characters)
            let expected = compareUTF16Reference(a, b)
            #expect(
                sign(Key.compareUTF16Order(a, b)) == expected,
                Comment("seed \(seed): \(a.debugDescription) vs \(b.debugDescription)"))
            if sign(Key.compareUTF16Order(a, b)) != expected { return }
        }
    }

    @Test func randomKeysAreValid() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<propertyIterations {
            let key = RandomValues.key(&g)
            #expect(throws: Never.self, Comment("seed \(seed)")) { try Key.validate(key) }
        }
    }
}
