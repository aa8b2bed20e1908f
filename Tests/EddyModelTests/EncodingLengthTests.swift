// The length helpers index readers use to skip a sort value or a path segment without
// decoding it.

import EddyModel
import EddyTesting
import Testing

@Suite struct EncodingLengthTests {
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
