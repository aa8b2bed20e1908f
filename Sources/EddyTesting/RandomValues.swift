// Random inputs for property tests: valid keys, paths, JSON values and sort values, drawn from
// a `SeededGenerator`. Small alphabets on purpose, so draws collide, share prefixes and hit the
// ordering edge cases (integer-like keys, UTF-16 vs code-point order, -0.0, NUL in strings).

import EddyModel

public enum RandomValues {
    /// Integer-like keys (Firebase sorts them numerically), including the edges of int32 and
    /// keys that tie by value ("0", "-0", "00").
    public static let integerLikeKeys = [
        "0", "1", "2", "5", "10", "01", "001", "00", "-0", "-00", "-1", "-5", "-01", "007", "99",
        "2147483647", "-2147483648", "02147483647", "0000000000005", "1000000000",
    ]

    /// Keys that look numeric but are strings for Firebase.
    public static let nearIntegerKeys = [
        "-", "--1", "+1", " 1", "1 ", "1a", "1e5", "2147483648", "-2147483649", "12345678901", "00000000000000x",
    ]

    /// Characters for string keys and string values: ASCII around the digits, letters of both
    /// cases, and characters on both sides of the UTF-16 surrogate range (U+D7FF, U+E000,
    /// U+FF61, U+FFFF below or above "😀", U+10000 and U+10FFFF).
    public static let keyCharacters: [Unicode.Scalar] = [
        "a", "b", "z", "A", "Z", "0", "1", "9", "-", "_", " ", "~", "!", "%", "+", ":",
        "\u{E9}", "\u{FF}", "\u{100}", "\u{7FF}", "\u{800}", "\u{4E2D}", "\u{D7FF}", "\u{E000}", "\u{F8FF}",
        "\u{FF61}", "\u{FFFD}", "\u{FFFF}", "\u{10000}", "\u{1F600}", "\u{1F601}", "\u{10FFFF}",
    ]

    /// Characters allowed in string values but not in keys.
    public static let valueOnlyCharacters: [Unicode.Scalar] = ["\u{0}", "\u{1}", "\n", "\u{7F}", ".", "/", "$", "[", "\""]

    /// A key that passes `Key.validate`.
    public static func key(_ g: inout SeededGenerator) -> String {
        switch g.int(in: 0..<10) {
        case 0, 1: return g.element(of: integerLikeKeys)
        case 2: return randomIntegerKey(&g)
        case 3: return g.element(of: nearIntegerKeys)
        case 4: return longKey(&g)
        default: return string(&g, length: g.int(in: 1...6), characters: keyCharacters)
        }
    }

    /// An integer-like key: an int32 in a small or the full range, sometimes zero-padded.
    public static func randomIntegerKey(_ g: inout SeededGenerator) -> String {
        let value = g.bool() ? Int64(g.int(in: -20...20)) : Int64(Int32.random(in: .min ... .max, using: &g))
        var digits = String(value.magnitude)
        if g.chance(1, in: 4) { digits = String(repeating: "0", count: g.int(in: 1...3)) + digits }
        return (value < 0 ? "-" : "") + digits
    }

    /// A key of 40 to 200 bytes: several random strings sharing a long common prefix.
    static func longKey(_ g: inout SeededGenerator) -> String {
        let prefix = String(repeating: g.element(of: ["a", "\u{E000}", "\u{1F600}", "0"]), count: g.int(in: 10...40))
        return prefix + string(&g, length: g.int(in: 0...3), characters: keyCharacters)
    }

    /// `length` characters drawn from `characters`.
    public static func string(_ g: inout SeededGenerator, length: Int, characters: [Unicode.Scalar]) -> String {
        var out = String.UnicodeScalarView()
        for _ in 0..<length { out.append(g.element(of: characters)) }
        return String(out)
    }

    /// A valid path of depth 1...`depthMax`.
    public static func path(_ g: inout SeededGenerator, depthMax: Int = 4) -> Path {
        precondition(depthMax >= 1 && depthMax <= Limits.pathDepthMax)
        let depth = g.int(in: 1...depthMax)
        return Path(validatedKeys: (0..<depth).map { _ in key(&g) })
    }

    /// A finite number: small integers, negatives, fractions, -0.0, extremes, random bit patterns.
    public static func number(_ g: inout SeededGenerator) -> Double {
        switch g.int(in: 0..<8) {
        case 0: return Double(g.int(in: -10...10))
        case 1: return g.element(of: [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 0.1, 1e-7, 3.25e20])
        case 2:
            return g.element(of: [
                Double.greatestFiniteMagnitude, -Double.greatestFiniteMagnitude, Double.leastNonzeroMagnitude,
                -Double.leastNonzeroMagnitude, Double.leastNormalMagnitude, 9_007_199_254_740_991, 9_007_199_254_740_992,
                -9_007_199_254_740_994, 2_147_483_647, -2_147_483_648,
            ])
        case 3: return Double(g.int(in: -1_000_000...1_000_000)) / 64
        case 4:
            while true {
                let n = Double(bitPattern: g.next())
                if n.isFinite { return n }
            }
        default: return Double(Int32.random(in: .min ... .max, using: &g))
        }
    }

    /// A whole number as `Value.integer` makes it: extremes, integers just beyond 2^53 (wide)
    /// and random 64-bit ones (almost always wide).
    public static func integer(_ g: inout SeededGenerator) -> Value {
        switch g.int(in: 0..<3) {
        case 0:
            return .integer(
                g.element(of: [
                    Int64.max, Int64.min, Int64.max - 1, Int64.min + 1, 9_007_199_254_740_993, -9_007_199_254_740_993,
                    9_007_199_254_740_992, 1 << 60, (1 << 60) + 1,
                ]))
        case 1: return .integer(9_007_199_254_740_992 + Int64(g.int(in: -3...3)))
        default: return .integer(Int64(bitPattern: g.next()))
        }
    }

    /// A string value: empty, short from the key characters, or with characters keys may not hold.
    public static func stringValue(_ g: inout SeededGenerator) -> String {
        if g.chance(1, in: 10) { return "" }
        let characters = g.chance(1, in: 4) ? keyCharacters + valueOnlyCharacters : keyCharacters
        return string(&g, length: g.int(in: 1...5), characters: characters)
    }

    /// A primitive value: boolean, number or string.
    public static func primitive(_ g: inout SeededGenerator) -> Value {
        switch g.int(in: 0..<5) {
        case 0: return .bool(g.bool())
        case 1: return .number(number(&g))
        case 2: return g.chance(1, in: 3) ? integer(&g) : .number(number(&g))
        default: return .string(stringValue(&g))
        }
    }

    /// A JSON value, at most `depthMax` objects deep with at most `widthMax` children each. With
    /// `normalized` false it may hold nulls and empty objects (what a client may send).
    public static func value(
        _ g: inout SeededGenerator, depthMax: Int = 3, widthMax: Int = 4, normalized: Bool = true
    ) -> Value {
        let raw = rawValue(&g, depthMax: depthMax, widthMax: widthMax, allowNull: !normalized)
        return normalized ? raw.normalized() : raw
    }

    private static func rawValue(_ g: inout SeededGenerator, depthMax: Int, widthMax: Int, allowNull: Bool) -> Value {
        if allowNull, g.chance(1, in: 10) { return .null }
        guard depthMax > 0, g.chance(2, in: 5) else { return primitive(&g) }
        var children: [String: Value] = [:]
        for _ in 0..<g.int(in: (allowNull ? 0 : 1)...widthMax) {
            children[key(&g)] = rawValue(&g, depthMax: depthMax - 1, widthMax: widthMax, allowNull: allowNull)
        }
        return .object(children)
    }

    /// A value as an index sees it: null (missing), a primitive, or an object.
    public static func sortValue(_ g: inout SeededGenerator) -> Value {
        switch g.int(in: 0..<10) {
        case 0: return .null
        case 1: return .object([key(&g): primitive(&g)])
        default: return primitive(&g)
        }
    }
}
