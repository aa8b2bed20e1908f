// Path parsing and limits: depth (`Limits.pathDepthMax`), key bytes (`Limits.keyBytesMax`; a
// whole path has no byte limit), empty segments, and the structural helpers.

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

    /// Firebase limits each key (768 bytes) and the depth (32), not a whole path's bytes.
    @Test func aPathOf32KeysOf768BytesIsAccepted() throws {
        let key = String(repeating: "k", count: 768)
        let path = try Path(Array(repeating: key, count: 32).joined(separator: "/"))
        #expect(path.depth == 32 && path.byteCount == 32 * 768 + 31)
        let emoji = String(repeating: "\u{1F600}", count: 192)  // 768 bytes of UTF-8
        #expect(try Path(emoji + "/" + emoji).byteCount == 1537)
        // One over-long key fails the key rule, naming the key and the limit.
        let error = expectEddyErrorSync(.invalidKey, mentioning: ["is 769 bytes", "keyBytesMax is 768"]) {
            _ = try Path("a/" + String(repeating: "x", count: 769))
        }
        #expect(error?.message.contains("xxxxxxxxxx") == true)
        expectEddyErrorSync(.invalidKey, mentioning: ["is 770 bytes", "keyBytesMax"]) { _ = try Path(emoji + "\u{E9}") }
        // 33 keys of 768 bytes: the depth rule, with the path abbreviated so the message stays readable.
        let deep = expectEddyErrorSync(.invalidPath, mentioning: ["33 keys deep", "pathDepthMax is 32"]) {
            _ = try Path(Array(repeating: key, count: 33).joined(separator: "/"))
        }
        #expect(deep.map { $0.message.utf8.count < 400 } == true)
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

    /// Firebase's sync tree raises one change's events depth first, children in key order
    /// (numeric keys first), each location after its descendants.
    @Test func eventOrderIsDepthFirstWithChildrenInKeyOrder() throws {
        let paths = try ["t", "t/d", "t/a", "t/a/x", "t/10", "t/9", "u", "t/d/b"].map { try Path($0) }
        let ordered = paths.sorted { $0.raisesEventsBefore($1) }.map(\.description)
        #expect(ordered == ["/t/9", "/t/10", "/t/a/x", "/t/a", "/t/d/b", "/t/d", "/t", "/u"])
        let t = try Path("t")
        #expect(!t.raisesEventsBefore(t))
    }
}
