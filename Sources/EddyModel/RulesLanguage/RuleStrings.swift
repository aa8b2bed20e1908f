// String operations of the rules language as JavaScript defines them, which Firebase's rules
// follow ("a subset of JavaScript's expression syntax"): a string is a sequence of UTF-16 code
// units. `length` counts code units; `==`, `<`, `beginsWith`, `endsWith`, `contains` and
// `replace` compare code units exactly. Swift's `String` compares canonically equivalent
// strings as equal and counts grapheme clusters, so `"e\u{301}" == "\u{E9}"` and
// `"a" + 50,000 combining marks` has a count of 1: a uid could match another user's key and a
// length limit could be passed by megabytes. Code units are compared through UTF-8 bytes where
// the two orders agree (equality, prefix, suffix, search) and through UTF-16 for ordering.

enum RuleStrings {
    /// JavaScript's `s.length`: UTF-16 code units.
    static func length(_ s: String) -> Int { s.utf16.count }

    /// JavaScript's `===` on strings: the same code units.
    static func equal(_ a: String, _ b: String) -> Bool { a.utf8.elementsEqual(b.utf8) }

    /// JavaScript's `<` on strings: code unit order (-1, 0, 1).
    static func compare(_ a: String, _ b: String) -> Int {
        if self.equal(a, b) { return 0 }
        return a.utf16.lexicographicallyPrecedes(b.utf16) ? -1 : 1
    }

    static func hasPrefix(_ s: String, _ prefix: String) -> Bool { s.utf8.starts(with: prefix.utf8) }

    static func hasSuffix(_ s: String, _ suffix: String) -> Bool {
        s.utf8.count >= suffix.utf8.count && s.utf8.suffix(suffix.utf8.count).elementsEqual(suffix.utf8)
    }

    /// The byte offset of the first occurrence of `needle` in `bytes` at or after `start`.
    private static func firstOffset(of needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, bytes.count - start >= needle.count else { return needle.isEmpty ? start : nil }
        var i = start
        while i <= bytes.count - needle.count {
            if bytes[i] == needle[0], bytes[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    static func contains(_ s: String, _ needle: String) -> Bool {
        self.firstOffset(of: Array(needle.utf8), in: Array(s.utf8), from: 0) != nil
    }

    /// Every occurrence of `target` (not empty) replaced, left to right, without overlaps.
    static func replacingAll(_ s: String, _ target: String, with replacement: String) -> String {
        let bytes = Array(s.utf8)
        let needle = Array(target.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var position = 0
        while let found = self.firstOffset(of: needle, in: bytes, from: position) {
            out += bytes[position..<found]
            out += replacement.utf8
            position = found + needle.count
        }
        out += bytes[position...]
        return String(decoding: out, as: UTF8.self)
    }
}
