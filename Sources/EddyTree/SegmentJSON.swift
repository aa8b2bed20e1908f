// The JSON text of a key straight from its encoded tree segment (`PathKeyEncoding`), without
// decoding it to a String: what `JSONWriter.writeString` writes for the decoded key, and the
// key's array index as `JSONWriter.arrayIndex` would give it.

import EddyModel

package enum SegmentJSON {
    /// Appends the key encoded as `segment` (one whole segment, terminator included) as a JSON
    /// string; returns its array index when the key is one (`0|[1-9][0-9]*`, at most 9 digits).
    @discardableResult
    package static func appendKey(_ segment: UnsafeRawBufferPointer, to out: inout [UInt8]) -> Int? {
        out.append(UInt8(ascii: "\""))
        defer { out.append(UInt8(ascii: "\"")) }
        if segment[0] == PathKeyEncoding.intTag {
            // tag, 4 value bytes, 2 length bytes, the key's own ASCII bytes (digits and '-'), 0x00
            let digits = UnsafeRawBufferPointer(rebasing: segment[7..<(segment.count - 1)])
            out.append(contentsOf: digits)
            return Self.arrayIndex(segment)
        }
        let text = UnsafeRawBufferPointer(rebasing: segment[1..<(segment.count - 1)])
        // Most keys (push IDs, names) need no escape and no mapping: one copy.
        if !text.contains(where: Self.needsRewrite) {
            out.append(contentsOf: text)
            return nil
        }
        for byte in text {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out.append(UInt8(ascii: "\\"))
                out.append(byte)
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x00..<0x20, 0x7F:
                // Keys hold no control bytes; written as JSONWriter would all the same.
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30])
                out.append(Self.hexDigits[Int(byte >> 4)])
                out.append(Self.hexDigits[Int(byte & 0xF)])
            case 0xF5, 0xF6: out.append(byte &- 7)  // undo the UTF-16 order rank
            default: out.append(byte)
            }
        }
        return nil
    }

    /// The array index of the key encoded as `segment`, as `appendKey` returns it.
    package static func arrayIndex(_ segment: UnsafeRawBufferPointer) -> Int? {
        guard segment[0] == PathKeyEncoding.intTag else { return nil }
        let digits = UnsafeRawBufferPointer(rebasing: segment[7..<(segment.count - 1)])
        guard digits.count <= 9, digits[0] != UInt8(ascii: "-"), digits[0] != UInt8(ascii: "0") || digits.count == 1 else {
            return nil
        }
        return digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    /// True for a byte `appendKey` does not copy as is: a quote, a backslash, a control byte
    /// or one of the two UTF-16 order ranks.
    @inline(__always)
    private static func needsRewrite(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0x7F || byte == 0xF5 || byte == 0xF6
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
