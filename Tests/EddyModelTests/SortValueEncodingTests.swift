// Index sort-value encoding: bytewise order equals `ValueOrder.compare` (and, with a key
// segment appended, the full index order), decode inverts encode (objects to the marker), the
// encoding is self-terminating, and malformed bytes are corruption.

import EddyModel
import EddyTesting
import Testing

@Suite struct SortValueEncodingTests {
    /// What decoding should give back: objects keep only their rank, and -0.0 is stored as +0.0.
    static func decoded(_ value: Value) -> Value {
        if case .object = value { return .object([:]) }
        return value
    }

    @Test func bytewiseOrderEqualsValueOrderForRandomValues() {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<propertyIterations {
            let a = RandomValues.sortValue(&g)
            let b = g.chance(1, in: 10) ? a : RandomValues.sortValue(&g)
            let expected = sign(ValueOrder.compare(a, b))
            let actual = compareBytes(SortValueEncoding.encode(a), SortValueEncoding.encode(b))
            #expect(actual == expected, Comment("seed \(seed): \(a) vs \(b)"))
            if actual != expected { return }
        }
    }

    @Test func valueThenKeyEncodingMatchesIndexOrder() {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<propertyIterations {
            let (a, ka) = (RandomValues.sortValue(&g), RandomValues.key(&g))
            let (b, kb) = g.chance(1, in: 5) ? (a, RandomValues.key(&g)) : (RandomValues.sortValue(&g), RandomValues.key(&g))
            var ea = SortValueEncoding.encode(a)
            var eb = SortValueEncoding.encode(b)
            PathKeyEncoding.appendSegment(ka, to: &ea)
            PathKeyEncoding.appendSegment(kb, to: &eb)
            let expected = sign(ValueOrder.compare(a, key: ka, b, key: kb))
            let actual = compareBytes(ea, eb)
            #expect(actual == expected, Comment("seed \(seed): (\(a), \(ka.debugDescription)) vs (\(b), \(kb.debugDescription))"))
            if actual != expected { return }
        }
    }

    @Test func decodeInvertsEncodeAndLeavesTheRest() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<propertyIterations {
            let value = RandomValues.sortValue(&g)
            let suffix: [UInt8] = g.bool() ? [] : [0x00, 0x01, 0xFF, 0x02]
            var bytes = (SortValueEncoding.encode(value) + suffix)[...]
            let back = try SortValueEncoding.decode(&bytes)
            #expect(back == Self.decoded(value), Comment("seed \(seed): \(value)"))
            #expect(Array(bytes) == suffix, Comment("seed \(seed): \(value)"))
            if back != Self.decoded(value) { return }
        }
    }

    @Test func negativeZeroEncodesAsZero() throws {
        #expect(SortValueEncoding.encode(.number(-0.0)) == SortValueEncoding.encode(.number(0)))
        var bytes = SortValueEncoding.encode(.number(-0.0))[...]
        guard case .number(let n) = try SortValueEncoding.decode(&bytes) else {
            Issue.record("not a number")
            return
        }
        #expect(n == 0 && n.sign == .plus)
    }

    @Test func orderedExamples() {
        let ascending: [Value] = [
            .null, .bool(false), .bool(true), .number(-.greatestFiniteMagnitude), .number(-1), .number(-.leastNonzeroMagnitude),
            .number(0), .number(.leastNonzeroMagnitude), .number(1), .number(1.5), .number(.greatestFiniteMagnitude),
            .string(""), .string("\u{0}"), .string("\u{0}\u{0}"), .string("\u{1}"), .string("a"), .string("a\u{0}"), .string("ab"),
            .string("\u{1F600}"), .string("\u{E000}"), .string("\u{FF61}"), .object(["a": .number(1)]),
        ]
        for (a, b) in zip(ascending, ascending.dropFirst()) {
            #expect(ValueOrder.compare(a, b) < 0, "\(a) < \(b)")
            #expect(SortValueEncoding.encode(a).lexicographicallyPrecedes(SortValueEncoding.encode(b)), "\(a) < \(b)")
        }
        #expect(SortValueEncoding.encode(.object(["a": .number(1)])) == SortValueEncoding.encode(.object(["b": .string("x")])))
    }

    @Test func goldenBytes() {
        // Format pinning: these bytes are on disk, so a change here is a format change.
        #expect(SortValueEncoding.encode(.null) == [0x10])
        #expect(SortValueEncoding.encode(.bool(false)) == [0x20])
        #expect(SortValueEncoding.encode(.bool(true)) == [0x21])
        #expect(SortValueEncoding.encode(.number(1)) == [0x30, 0xBF, 0xF0, 0, 0, 0, 0, 0, 0])
        #expect(SortValueEncoding.encode(.number(-1)) == [0x30, 0x40, 0x0F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(SortValueEncoding.encode(.string("a\u{0}")) == [0x40, 0x61, 0x00, 0xFF, 0x00, 0x01])
        #expect(SortValueEncoding.encode(.string("\u{E000}")) == [0x40, 0xF5, 0x80, 0x80, 0x00, 0x01])
        #expect(SortValueEncoding.encode(.object([:])) == [0x50])
    }

    @Test(arguments: [
        [], [0x11], [0x30, 0x00], [0x40, 0x61], [0x40, 0x61, 0x00], [0x40, 0x61, 0x00, 0x02], [0x40, 0xC3, 0x00, 0x01],
        [0xFF],
    ] as [[UInt8]])
    func malformedBytesAreCorruption(bytes: [UInt8]) {
        var slice = bytes[...]
        expectEddyErrorSync(.corruption, mentioning: ["malformed sort value"]) { _ = try SortValueEncoding.decode(&slice) }
    }
}
