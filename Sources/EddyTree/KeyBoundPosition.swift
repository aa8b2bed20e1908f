// Where a key bound (`startAt(v, key)`, a key-ordered query's bounds) falls among the encoded
// child segments of a location: the one translation from a key the user gave to the bytes an
// iterator seeks to, shared by key-ordered queries and index scans.

import EddyModel

/// Where a key bound sits among encoded child segments.
package enum KeyBoundPosition {
    /// The segment of a key that may be stored: the bound can equal a child.
    case key([UInt8])
    /// A string no stored key can equal (it holds a byte keys never contain): the bytes sort
    /// after every child segment smaller than the bound and before every greater one.
    case between([UInt8])

    /// Stored keys contain no forbidden byte, so a bound P + c + … (c forbidden) compares with
    /// every stored key exactly as the point just past P's own segment and subtree (c == 0x00:
    /// `P 0x00 0xFF`) or as `P c` (c > 0x00: every key byte after P is above or below c).
    package init(_ key: String) {
        let bytes = Array(key.utf8)
        guard let i = bytes.firstIndex(where: Key.isForbidden) else {
            var segment: [UInt8] = []
            PathKeyEncoding.appendSegment(key, to: &segment)
            self = .key(segment)
            return
        }
        var between: [UInt8] = [PathKeyEncoding.stringTag]
        for byte in bytes[..<i] { between.append(Key.utf16OrderRank(byte)) }
        if bytes[i] == 0 { between += [0x00, 0xFF] } else { between.append(bytes[i]) }
        self = .between(between)
    }
}
