// Leaf record encoding: round trips for every primitive (bit-exact numbers), golden bytes, and
// corrupt records reported as `.corruption`.

import EddyModel
import EddyTesting
import Testing

@Suite struct LeafEncodingTests {
    @Test(arguments: [
        Value.bool(false), .bool(true), .number(0), .number(-1.5), .number(.greatestFiniteMagnitude),
        .number(.leastNonzeroMagnitude), .string(""), .string("a"), .string("\u{0}\u{1F600}\u{FF61}\n"),
    ])
    func roundTrip(value: Value) throws {
        #expect(try LeafEncoding.decode(LeafEncoding.encode(value)) == value)
    }

    @Test func roundTripRandomPrimitivesBitExact() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<propertyIterations {
            let value = RandomValues.primitive(&g)
            let back = try LeafEncoding.decode(LeafEncoding.encode(value))
            if case .number(let n) = value, case .number(let m) = back {
                // Bit-exact, except that -0 is stored as +0 (see negativeZeroIsStoredAsPositiveZero).
                #expect((n == 0 ? 0.0 : n).bitPattern == m.bitPattern, Comment("seed \(seed): \(n)"))
            } else {
                #expect(back == value, Comment("seed \(seed): \(value)"))
            }
        }
    }

    /// -0 is stored as +0: the log keeps values as JSON, where -0 renders as "0", so a replica
    /// replaying the log must end with the same bits as the leader.
    @Test func negativeZeroIsStoredAsPositiveZero() throws {
        guard case .number(let n) = try LeafEncoding.decode(LeafEncoding.encode(.number(-0.0))) else {
            Issue.record("not a number")
            return
        }
        #expect(n.sign == .plus)
        #expect(LeafEncoding.encode(.number(-0.0)) == LeafEncoding.encode(.number(0)))
    }

    @Test func goldenBytes() {
        #expect(LeafEncoding.encode(.bool(false)) == [0x01])
        #expect(LeafEncoding.encode(.bool(true)) == [0x02])
        #expect(LeafEncoding.encode(.number(1)) == [0x03, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F])
        #expect(LeafEncoding.encode(.string("h\u{E9}")) == [0x04, 0x68, 0xC3, 0xA9])
    }

    @Test(arguments: [
        [],  // empty
        [0x00],  // unknown tag
        [0x05, 0x61],  // unknown tag
        [0x01, 0x00],  // false with trailing bytes
        [0x02, 0x02],  // true with trailing bytes
        [0x03, 0, 0, 0, 0, 0, 0, 0xF0],  // short number
        [0x03, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0x00],  // long number
        [0x03, 0, 0, 0, 0, 0, 0, 0xF8, 0x7F],  // NaN
        [0x03, 0, 0, 0, 0, 0, 0, 0xF0, 0x7F],  // +infinity
        [0x03, 0, 0, 0, 0, 0, 0, 0xF0, 0xFF],  // -infinity
        [0x04, 0xFF],  // invalid UTF-8
        [0x04, 0x61, 0xE2, 0x82],  // truncated UTF-8
        [0x04, 0xED, 0xA0, 0x80],  // encoded surrogate
    ] as [[UInt8]])
    func corruptBytesThrowCorruption(bytes: [UInt8]) {
        expectEddyErrorSync(.corruption) { _ = try LeafEncoding.decode(bytes) }
        _ = bytes.withUnsafeBytes { raw in
            expectEddyErrorSync(.corruption) { _ = try LeafEncoding.decode(raw) }
        }
    }

    @Test func encodingANonPrimitiveStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            _ = LeafEncoding.encode(.object(["a": .number(1)]))
        }
        await #expect(processExitsWith: .failure) {
            _ = LeafEncoding.encode(.null)
        }
    }
}
