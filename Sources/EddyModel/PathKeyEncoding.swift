// Order-preserving byte encoding of paths: bytewise order of encoded paths equals Firebase key
// order segment by segment, and a path's encoding is a prefix of each descendant's.
//
// Grammar (one segment; a path is its segments concatenated, the root is empty):
//   segment     = int-segment | str-segment
//   int-segment = 0x01  u32be(int32 value XOR 0x8000_0000)  u16be(utf8 length)  utf8  0x00
//   str-segment = 0x02  rank-mapped utf8  0x00
// Integer-like keys rank by value, then length, then bytes (see `Key.compare`). String keys use
// `Key.utf16OrderRank` on every byte (0xEE/0xEF -> 0xF5/0xF6) so bytes sort in UTF-16 order.
// Keys contain no control bytes, so the 0x00 terminator ends each segment unambiguously and is
// smaller than any key byte (a key sorts before its extensions).

public enum PathKeyEncoding {
    public static let intTag: UInt8 = 0x01
    public static let stringTag: UInt8 = 0x02

    public static func encode(_ path: Path) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(path.keys.reduce(0) { $0 + $1.utf8.count + 8 })
        for key in path.keys { appendSegment(key, to: &out) }
        return out
    }

    public static func appendSegment(_ key: String, to out: inout [UInt8]) {
        if let value = Key.integerValue(key) {
            out.append(intTag)
            let biased = UInt32(bitPattern: value) ^ 0x8000_0000
            out.append(UInt8(truncatingIfNeeded: biased >> 24))
            out.append(UInt8(truncatingIfNeeded: biased >> 16))
            out.append(UInt8(truncatingIfNeeded: biased >> 8))
            out.append(UInt8(truncatingIfNeeded: biased))
            let length = UInt16(key.utf8.count)
            out.append(UInt8(length >> 8))
            out.append(UInt8(length & 0xFF))
            out.append(contentsOf: key.utf8)
        } else {
            out.append(stringTag)
            for byte in key.utf8 { out.append(Key.utf16OrderRank(byte)) }
        }
        out.append(0x00)
    }

    /// Decodes every segment of `bytes`. Throws `corruption` on malformed input: these bytes
    /// come from disk.
    public static func decode(_ bytes: some Collection<UInt8>) throws(EddyError) -> Path {
        var keys: [String] = []
        var rest = Array(bytes)[...]
        while !rest.isEmpty {
            keys.append(try decodeSegment(&rest))
        }
        return Path(validatedKeys: keys)
    }

    /// Decodes one segment from the front of `bytes` and removes it.
    public static func decodeSegment(_ bytes: inout ArraySlice<UInt8>) throws(EddyError) -> String {
        guard let tag = bytes.first else { throw corrupt("empty segment") }
        bytes.removeFirst()
        switch tag {
        case intTag:
            guard bytes.count >= 6 else { throw corrupt("short integer segment") }
            let start = bytes.startIndex
            let biased = bytes[start..<start + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let length = Int(bytes[start + 4]) << 8 | Int(bytes[start + 5])
            bytes.removeFirst(6)
            guard bytes.count > length, bytes[bytes.startIndex + length] == 0 else {
                throw corrupt("integer segment length \(length) overruns the key")
            }
            let raw = bytes.prefix(length)
            bytes.removeFirst(length + 1)
            // Integer-like keys are ASCII digits and '-' (checked below); no validation needed.
            let key = String(decoding: raw, as: UTF8.self)
            guard Key.integerValue(key) == Int32(bitPattern: biased ^ 0x8000_0000) else {
                throw corrupt("integer segment value does not match its key")
            }
            return key
        case stringTag:
            guard let end = bytes.firstIndex(of: 0) else { throw corrupt("unterminated string segment") }
            let key: String
            if bytes[..<end].allSatisfy({ $0 < 0x80 }) {
                // ASCII: ranks equal bytes and every byte is valid (the common case, and the
                // generic validating initializer is slow).
                key = String(decoding: bytes[..<end], as: UTF8.self)
            } else {
                var raw: [UInt8] = []
                raw.reserveCapacity(end - bytes.startIndex)
                for byte in bytes[..<end] {
                    raw.append(byte == 0xF5 || byte == 0xF6 ? byte &- 7 : byte)
                }
                guard let validated = String(validating: raw, as: UTF8.self) else { throw corrupt("invalid UTF-8") }
                key = validated
            }
            bytes.removeFirst(end - bytes.startIndex + 1)
            guard Key.integerValue(key) == nil else { throw corrupt("integer-like key in a string segment") }
            return key
        default:
            throw corrupt("unknown segment tag 0x\(String(tag, radix: 16))")
        }
    }

    /// The length of the encoded segment at the front of `bytes`, without decoding it; nil when
    /// malformed.
    public static func segmentLength(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard let tag = bytes.first else { return nil }
        let start = bytes.startIndex
        switch tag {
        case intTag:
            guard bytes.count >= 7 else { return nil }
            let length = Int(bytes[start + 5]) << 8 | Int(bytes[start + 6])
            let total = 1 + 6 + length + 1
            guard bytes.count >= total, bytes[start + total - 1] == 0 else { return nil }
            return total
        case stringTag:
            guard let end = bytes[(start + 1)...].firstIndex(of: 0) else { return nil }
            return end - start + 1
        default:
            return nil
        }
    }

    /// Smallest byte string greater than every key with `prefix` as a proper prefix that is a
    /// descendant segment sequence (segments start with tag bytes < 0xFF). Used to skip a
    /// subtree: seek to `prefix + [0xFF]`.
    public static func subtreeEnd(_ prefix: [UInt8]) -> [UInt8] {
        prefix + [0xFF]
    }

    private static func corrupt(_ what: String) -> EddyError {
        EddyError(.corruption, "malformed tree key: \(what)")
    }
}
