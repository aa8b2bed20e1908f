// Tree-key encoding: bytewise order equals Firebase key order segment by segment, a path's
// encoding prefixes its descendants', subtreeEnd bounds a subtree, decode inverts encode, and
// malformed bytes are reported as corruption.

import EddyModel
import EddyTesting
import Testing

@Suite struct PathKeyEncodingTests {
    /// Firebase order of paths: segment by segment with `Key.compare`; an ancestor comes first.
    static func comparePaths(_ a: Path, _ b: Path) -> Int {
        for (x, y) in zip(a.keys, b.keys) {
            let c = Key.compare(x, y)
            if c != 0 { return sign(c) }
        }
        return sign(a.depth - b.depth)
    }

    @Test func bytewiseOrderEqualsKeyOrderForRandomKeys() {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<propertyIterations {
            let a = RandomValues.key(&g)
            let b = g.chance(1, in: 10) ? a : RandomValues.key(&g)
            var ea: [UInt8] = []
            var eb: [UInt8] = []
            PathKeyEncoding.appendSegment(a, to: &ea)
            PathKeyEncoding.appendSegment(b, to: &eb)
            let expected = sign(Key.compare(a, b))
            #expect(
                compareBytes(ea, eb) == expected,
                Comment("seed \(seed): \(a.debugDescription) vs \(b.debugDescription)"))
            if compareBytes(ea, eb) != expected { return }
        }
    }

    @Test func bytewiseOrderEqualsPathOrderForRandomPaths() {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<propertyIterations {
            let a = RandomValues.path(&g)
            // Often share a prefix with `a`, so deep differences are exercised.
            let b: Path =
                g.bool()
                ? Path(validatedKeys: Array(a.keys.prefix(g.int(in: 0...a.depth)))).appending(
                    RandomValues.path(&g, depthMax: 2))
                : RandomValues.path(&g)
            let expected = Self.comparePaths(a, b)
            let actual = compareBytes(PathKeyEncoding.encode(a), PathKeyEncoding.encode(b))
            #expect(actual == expected, Comment("seed \(seed): \(a) vs \(b)"))
            if actual != expected { return }
        }
    }

    @Test func decodeInvertsEncodeForRandomPaths() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<propertyIterations {
            let path = RandomValues.path(&g, depthMax: 6)
            let decoded = try PathKeyEncoding.decode(PathKeyEncoding.encode(path))
            #expect(decoded == path, Comment("seed \(seed): \(path)"))
            if decoded != path { return }
        }
    }

    @Test func ancestorEncodingPrefixesDescendantsAndSubtreeEndBoundsThem() {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<propertyIterations {
            let p = RandomValues.path(&g, depthMax: 3)
            let q =
                g.bool() ? p.appending(RandomValues.path(&g, depthMax: 2)) : RandomValues.path(&g, depthMax: 4)
            let ep = PathKeyEncoding.encode(p)
            let eq = PathKeyEncoding.encode(q)
            let end = PathKeyEncoding.subtreeEnd(ep)
            let inside = eq.starts(with: ep) && compareBytes(ep, eq) <= 0 && compareBytes(eq, end) < 0
            let outside = compareBytes(eq, ep) < 0 || compareBytes(eq, end) >= 0
            if p.isAncestorOrSelf(of: q) {
                #expect(inside, Comment("seed \(seed): \(q) should lie in the subtree of \(p)"))
            } else {
                #expect(outside && !eq.starts(with: ep), Comment("seed \(seed): \(q) should lie outside the subtree of \(p)"))
            }
        }
    }

    @Test func rootEncodesEmpty() throws {
        #expect(PathKeyEncoding.encode(.root) == [])
        #expect(try PathKeyEncoding.decode([UInt8]()) == .root)
    }

    @Test func goldenBytes() throws {
        // Format pinning: these bytes are on disk, so a change here is a format change.
        #expect(PathKeyEncoding.encode(try Path("a")) == [0x02, 0x61, 0x00])
        #expect(PathKeyEncoding.encode(try Path("-1")) == [0x01, 0x7F, 0xFF, 0xFF, 0xFF, 0x00, 0x02, 0x2D, 0x31, 0x00])
        #expect(PathKeyEncoding.encode(try Path("007")) == [0x01, 0x80, 0x00, 0x00, 0x07, 0x00, 0x03, 0x30, 0x30, 0x37, 0x00])
        #expect(PathKeyEncoding.encode(try Path("\u{FF61}")) == [0x02, 0xF6, 0xBD, 0xA1, 0x00])
        #expect(PathKeyEncoding.encode(try Path("x/1")) == [0x02, 0x78, 0x00, 0x01, 0x80, 0x00, 0x00, 0x01, 0x00, 0x01, 0x31, 0x00])
    }

    @Test(arguments: [
        [0x03, 0x61, 0x00],  // unknown tag
        [0x00],  // unknown tag 0
        [0x02, 0x61],  // unterminated string
        [0x01, 0x80, 0x00, 0x00],  // short integer segment
        [0x01, 0x80, 0x00, 0x00, 0x01, 0x00, 0x05, 0x31, 0x00],  // length overruns
        [0x01, 0x80, 0x00, 0x00, 0x01, 0x00, 0x01, 0x31, 0x31],  // missing terminator
        [0x02, 0xC3, 0x00],  // truncated UTF-8
        [0x02, 0x61, 0x00, 0x02],  // trailing partial segment
        [0x01, 0x80, 0x00, 0x00, 0x01, 0x00, 0x01, 0xFF, 0x00],  // invalid UTF-8 in an integer key
        [0x01, 0x80, 0x00, 0x00, 0x01, 0x00, 0x01, 0x61, 0x00],  // integer tag, string key "a"
        [0x01, 0x80, 0x00, 0x00, 0x02, 0x00, 0x01, 0x31, 0x00],  // value 2 stored with key "1"
        [0x02, 0x31, 0x00],  // string tag, integer-like key "1"
    ] as [[UInt8]])
    func malformedBytesAreCorruption(bytes: [UInt8]) {
        expectEddyErrorSync(.corruption, mentioning: ["malformed tree key"]) { _ = try PathKeyEncoding.decode(bytes) }
    }

    @Test func decodeSegmentConsumesOneSegment() throws {
        var bytes = PathKeyEncoding.encode(try Path("12/b"))[...]
        #expect(try PathKeyEncoding.decodeSegment(&bytes) == "12")
        #expect(Array(bytes) == [0x02, 0x62, 0x00])
        #expect(try PathKeyEncoding.decodeSegment(&bytes) == "b")
        #expect(bytes.isEmpty)
    }
}
