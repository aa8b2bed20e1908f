// Covered index values: decode inverts encode for random values, equal values encode to equal
// bytes whatever the dictionary order, -0 becomes +0, and malformed bytes are corruption.
// Also the length helpers index readers use to skip a sort value or a path segment.

import EddyModel
import EddyTesting
import Testing

@Suite struct ValueEncodingTests {
    @Test func roundTripsRandomValues() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<propertyIterations {
            let value = g.chance(1, in: 4) ? RandomValues.primitive(&g) : RandomValues.value(&g, depthMax: 4, widthMax: 5)
            let decoded = try ValueEncoding.decode(ValueEncoding.encode(value))
            #expect(decoded == value, Comment("seed \(seed): \(value)"))
            if decoded != value { return }
        }
    }

    @Test func equalObjectsEncodeToEqualBytes() {
        var a: [String: Value] = [:]
        var b: [String: Value] = [:]
        let keys = (0..<50).map { "k\($0)" }
        for key in keys { a[key] = .number(1) }
        for key in keys.reversed() { b[key] = .number(1) }
        #expect(ValueEncoding.encode(.object(a)) == ValueEncoding.encode(.object(b)))
    }

    @Test func negativeZeroIsWrittenAsPositiveZero() throws {
        #expect(ValueEncoding.encode(.number(-0.0)) == ValueEncoding.encode(.number(0.0)))
        guard case .number(let n) = try ValueEncoding.decode(ValueEncoding.encode(.number(-0.0))) else {
            Issue.record("not a number")
            return
        }
        #expect(n.sign == .plus)
    }

    @Test(arguments: [
        [UInt8](), [0x09], [0x03, 0, 0], [0x04, 5, 0x61], [0x04, 1, 0xFF], [0x05, 1, 1, 0x61], [0x00, 0x00],
        [0x05, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01],
    ])
    func malformedBytesAreCorruption(bytes: [UInt8]) {
        do {
            _ = try ValueEncoding.decode(bytes)
            Issue.record("decoded \(bytes)")
        } catch {
            #expect(error.code == .corruption, "\(error)")
        }
    }

    @Test func sortValueLengthMatchesTheEncoding() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<propertyIterations {
            let value = RandomValues.sortValue(&g)
            var bytes = SortValueEncoding.encode(value)
            let length = bytes.count
            bytes += [0x02, 0x61, 0x00]  // a key segment follows in an index key
            #expect(try SortValueEncoding.length(bytes[...]) == length, Comment("seed \(seed): \(value)"))
        }
        #expect(throws: EddyError.self) { try SortValueEncoding.length([0x40, 0x61][...]) }
        #expect(throws: EddyError.self) { try SortValueEncoding.length([0x30, 1, 2][...]) }
    }

    @Test func segmentLengthMatchesTheEncoding() {
        for key in ["a", "0", "-1", "2147483647", "2147483648", "é", "😀", "01"] {
            var bytes: [UInt8] = []
            PathKeyEncoding.appendSegment(key, to: &bytes)
            let length = bytes.count
            PathKeyEncoding.appendSegment("next", to: &bytes)
            #expect(PathKeyEncoding.segmentLength(bytes[...]) == length, "\(key)")
        }
        #expect(PathKeyEncoding.segmentLength([0x02, 0x61][...]) == nil)
        #expect(PathKeyEncoding.segmentLength([0x01, 0, 0, 0][...]) == nil)
        #expect(PathKeyEncoding.segmentLength([0x07][...]) == nil)
    }
}
