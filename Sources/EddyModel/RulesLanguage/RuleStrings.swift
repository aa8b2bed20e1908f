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

    /// Searches for one needle in linear time (Knuth-Morris-Pratt): O(needle) to build, then
    /// each byte of the text is looked at a bounded number of times, whatever the needle. A
    /// naive search is O(text x needle): `contains` of a 10,000-byte needle in a 1 MB value
    /// held a thread for minutes.
    private struct Searcher {
        let needle: [UInt8]
        /// failure[i]: the length of the longest proper border of needle[0...i].
        let failure: [Int]

        init(_ needle: [UInt8]) {
            self.needle = needle
            var failure = [Int](repeating: 0, count: needle.count)
            var border = 0
            var i = 1
            while i < needle.count {
                while border > 0, needle[i] != needle[border] { border = failure[border - 1] }
                if needle[i] == needle[border] { border += 1 }
                failure[i] = border
                i += 1
            }
            self.failure = failure
        }

        /// The byte offset of the first occurrence in `bytes` at or after `start`.
        func firstOffset(in bytes: [UInt8], from start: Int) -> Int? {
            guard !self.needle.isEmpty else { return start }
            var matched = 0
            var i = start
            while i < bytes.count {
                while matched > 0, bytes[i] != self.needle[matched] { matched = self.failure[matched - 1] }
                if bytes[i] == self.needle[matched] { matched += 1 }
                if matched == self.needle.count { return i + 1 - matched }
                i += 1
            }
            return nil
        }
    }

    static func contains(_ s: String, _ needle: String) -> Bool {
        Searcher(Array(needle.utf8)).firstOffset(in: Array(s.utf8), from: 0) != nil
    }

    /// Every occurrence of `target` (not empty) replaced, left to right, without overlaps; nil
    /// when the result would be over `bytesMax` (chained replaces grow a value exponentially:
    /// ten of them made 6 GB of a 100 KB write and ended the daemon).
    static func replacingAll(_ s: String, _ target: String, with replacement: String, bytesMax: Int) -> String? {
        let bytes = Array(s.utf8)
        let searcher = Searcher(Array(target.utf8))
        let replacementBytes = Array(replacement.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(min(bytes.count, bytesMax))
        var position = 0
        while let found = searcher.firstOffset(in: bytes, from: position) {
            guard out.count + (found - position) + replacementBytes.count <= bytesMax else { return nil }
            out += bytes[position..<found]
            out += replacementBytes
            position = found + target.utf8.count
        }
        guard out.count + (bytes.count - position) <= bytesMax else { return nil }
        out += bytes[position...]
        return String(decoding: out, as: UTF8.self)
    }
}
