// A key's JSON text written straight from its encoded segment (`SegmentJSON.appendKey`) against
// `JSONWriter.writeString` of the key itself: the one-copy path (no byte to escape or map) and
// the byte-by-byte path (quotes, backslashes, the UTF-16 order ranks of U+E000 and above), over
// fixed keys and seeded random ones. Rerun a failure with `EDDY_SEED=<seed>`.

import EddyModel
import EddyTesting
import EddyTree
import Testing

@Suite struct SegmentJSONTests {
    static func segmentJSON(_ key: String) -> (text: [UInt8], arrayIndex: Int?) {
        var segment: [UInt8] = []
        PathKeyEncoding.appendSegment(key, to: &segment)
        var out: [UInt8] = []
        let index = segment.withUnsafeBytes { SegmentJSON.appendKey($0, to: &out) }
        return (out, index)
    }

    static func expected(_ key: String) -> [UInt8] {
        var out: [UInt8] = []
        JSONWriter.writeString(key, into: &out)
        return out
    }

    @Test(arguments: [
        "-NjEtLV-SpIUo70bAFGL", "name", "a b", "say \"hi\"", "back\\slash", "\"", "\\", "ends\\",
        "caf\u{E9}", "\u{4E2D}\u{6587}", "\u{E000}", "a\u{F8FF}b", "\u{FF61}", "\u{FFFF}", "\u{1F600}", "x\u{10FFFF}",
        "0", "7", "42", "01", "-1", "1000000000",
    ])
    func aKeyIsWrittenAsJSONWritesIt(key: String) {
        let (text, index) = Self.segmentJSON(key)
        #expect(text == Self.expected(key), "key \(key.debugDescription)")
        let wantIndex = ["0", "7", "42"].contains(key) ? Int(key) : nil
        #expect(index == wantIndex, "array index of \(key.debugDescription)")
    }

    @Test func randomKeysAreWrittenAsJSONWritesThem() {
        let seed = SeededGenerator.seedFromEnvironment()
        print("SegmentJSONTests: EDDY_SEED=\(seed)")
        var g = SeededGenerator(seed: seed)
        let characters = RandomValues.keyCharacters + ["\"", "\\"]
        for n in 0..<2000 {
            let key = n % 2 == 0 ? RandomValues.key(&g) : RandomValues.string(&g, length: g.int(in: 1...12), characters: characters)
            #expect(Self.segmentJSON(key).text == Self.expected(key), "seed \(seed) key \(key.debugDescription)")
        }
    }
}
