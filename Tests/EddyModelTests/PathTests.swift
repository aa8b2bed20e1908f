// Path parsing and limits: depth (`Limits.pathDepthMax`), bytes (`Limits.pathBytesMax`), empty
// segments, and the structural helpers.

import EddyModel
import EddyTesting
import Testing

@Suite struct PathTests {
    static func path(depth: Int) -> String {
        (0..<depth).map { "k\($0)" }.joined(separator: "/")
    }

    @Test func depth32IsAcceptedAnd33Refused() throws {
        #expect(try Path(Self.path(depth: 32)).depth == 32)
        expectEddyErrorSync(.invalidPath, mentioning: ["33 keys deep", "pathDepthMax is 32"]) {
            _ = try Path(Self.path(depth: 33))
        }
        expectEddyErrorSync(.invalidPath, mentioning: ["pathDepthMax is 32"]) {
            try Path(validatedKeys: Array(repeating: "a", count: 33)).validateSize()
        }
    }

    @Test func bytes768AreAcceptedAnd769Refused() throws {
        // 384 + "/" + 383 = 768 bytes; the leading slash does not count.
        let ok = "/" + String(repeating: "a", count: 384) + "/" + String(repeating: "b", count: 383)
        let path = try Path(ok)
        #expect(path.byteCount == 768)
        let tooLong = String(repeating: "a", count: 384) + "/" + String(repeating: "b", count: 384)
        let error = expectEddyErrorSync(.invalidPath, mentioning: ["is 769 bytes", "pathBytesMax is 768"]) {
            _ = try Path(tooLong)
        }
        // The path in the message is abbreviated so it stays readable.
        #expect(error?.message.contains("…") == true)
        // Multi-byte characters count in UTF-8 bytes.
        let emoji = String(repeating: "\u{1F600}", count: 96)  // 384 bytes
        #expect(try Path(emoji + "/" + String(repeating: "c", count: 383)).byteCount == 768)
        expectEddyErrorSync(.invalidPath, mentioning: ["pathBytesMax"]) { _ = try Path(emoji + "/" + emoji) }
        // One over-long key fails the key rule first.
        expectEddyErrorSync(.invalidKey, mentioning: ["keyBytesMax"]) { _ = try Path(String(repeating: "a", count: 769)) }
    }

    @Test(arguments: ["a/b", "/a/b", "a/b/", "//a//b//", "/a///b"])
    func emptySegmentsAreIgnored(text: String) throws {
        let path = try Path(text)
        #expect(path.keys == ["a", "b"])
        #expect(path == Path(validatedKeys: ["a", "b"]))
        #expect(path.description == "/a/b")
    }

    @Test(arguments: ["", "/", "//", "///"])
    func emptyPathIsRoot(text: String) throws {
        let path = try Path(text)
        #expect(path.isRoot)
        #expect(path == .root)
        #expect(path.description == "/")
        #expect(path.byteCount == 0)
        #expect(path.parent == nil)
        #expect(path.lastKey == nil)
    }

    @Test func invalidSegmentNamesKeyAndPath() {
        expectEddyErrorSync(.invalidKey, mentioning: ["key \"b.c\"", "in path \"/a/b.c/d\""]) { _ = try Path("/a/b.c/d") }
        expectEddyErrorSync(.invalidKey, mentioning: ["\"$\""]) { _ = try Path("a/$b") }
        expectEddyErrorSync(.invalidKey, mentioning: ["control character 0xA"]) { _ = try Path("a/b\nc") }
    }

    @Test func structure() throws {
        let path = try Path("a/b/c")
        #expect(path.depth == 3)
        #expect(path.lastKey == "c")
        #expect(path.parent == (try Path("a/b")))
        #expect(path.parent?.parent?.parent == .root)
        #expect(Path.root.appending("a").appending("b") == (try Path("a/b")))
        #expect((try Path("a")).appending(try Path("b/c")) == path)
        #expect(Path.root.isAncestorOrSelf(of: path))
        #expect((try Path("a/b")).isAncestorOrSelf(of: path))
        #expect(path.isAncestorOrSelf(of: path))
        #expect(!path.isAncestorOrSelf(of: try Path("a/b")))
        #expect(!(try Path("a/bb")).isAncestorOrSelf(of: try Path("a/b/c")))
        #expect(!(try Path("a/b")).isAncestorOrSelf(of: try Path("a/bc")))
        #expect(path.byteCount == 5)
    }

    @Test func abbreviatedKeepsShortPathsWhole() throws {
        let short = try Path("a/b")
        #expect(short.abbreviated == "/a/b")
        let long = try Path(String(repeating: "x", count: 200))
        #expect(long.abbreviated.hasPrefix("/" + String(repeating: "x", count: 99)))
        #expect(long.abbreviated.hasSuffix("…"))
        #expect(long.abbreviated.count == 101)
    }
}
