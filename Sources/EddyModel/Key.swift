// Firebase's key rules and key order (`nameCompare` in firebase-js-sdk core/util/util.ts),
// plus one rule of Eddy's own: non-ASCII keys must be in Unicode NFC (see `isNFC`).
//
// Key order: integer-like keys first (`^-?(0*)[0-9]{1,10}$` within int32), ascending by value,
// equal values by string length (shorter first), and — where Firebase would answer "equal" for
// distinct keys such as "-0" and "00" — by their bytes, so the order is total. Then every
// other key in UTF-16 code-unit order (what Firebase's JS and Java code compare).

public enum Key {
    /// Validates one key. `inPath` only improves the message.
    public static func validate(_ key: String, inPath: String? = nil) throws(EddyError) {
        // Only built for an error message (this runs for every key of every path).
        func place() -> String { inPath.map { " in path \"\(abbreviate($0))\"" } ?? "" }
        if key.isEmpty {
            throw EddyError(.invalidKey, "empty key\(place()); keys must be non-empty")
        }
        let bytes = key.utf8.count
        if bytes > Limits.keyBytesMax {
            throw EddyError(
                .invalidKey,
                "key \"\(abbreviate(key))\"\(place()) is \(bytes) bytes; keyBytesMax is \(Limits.keyBytesMax)")
        }
        var ascii = true
        for byte in key.utf8 {
            if let name = forbiddenCharacterName(byte) {
                if key == ".priority" {
                    throw EddyError(
                        .invalidKey,
                        "key \".priority\"\(place()) is a location's priority, not a child; write a priority in the export form ({\".value\": v, \".priority\": p}) or at <path>/.priority")
                }
                throw EddyError(
                    .invalidKey,
                    "key \"\(printable(key))\"\(place()) contains \(name); keys may not contain . $ # [ ] / or ASCII control characters"
                )
            }
            if byte >= 0x80 { ascii = false }
        }
        if !ascii, !isNFC(key) {
            throw EddyError(
                .invalidKey,
                "key \"\(printable(key))\"\(place()) is not in Unicode NFC (composed) form; send keys in NFC, e.g. \"\\u00e9\" rather than \"e\\u0301\""
            )
        }
    }

    /// Keys must be in Unicode NFC. Eddy stores keys byte for byte (as Firebase does) but
    /// Swift's `String` equality, and so every `[String: Value]` object, is canonical
    /// equivalence: "é" and "e" + U+0301 would be two keys on disk and one when read. Among
    /// NFC strings canonical equivalence is byte equality, so refusing other forms keeps the
    /// two views identical. (`_nfcCodeUnits` is the standard library's NFC normalizer.)
    static func isNFC(_ key: String) -> Bool {
        key._nfcCodeUnits.elementsEqual(key.utf8)
    }

    /// True for a byte no stored key contains (`. $ # [ ] /` and ASCII control characters).
    public static func isForbidden(_ byte: UInt8) -> Bool { forbiddenCharacterName(byte) != nil }

    static func forbiddenCharacterName(_ byte: UInt8) -> String? {
        switch byte {
        case UInt8(ascii: "."): return "\".\""
        case UInt8(ascii: "$"): return "\"$\""
        case UInt8(ascii: "#"): return "\"#\""
        case UInt8(ascii: "["): return "\"[\""
        case UInt8(ascii: "]"): return "\"]\""
        case UInt8(ascii: "/"): return "\"/\""
        case 0x00...0x1F, 0x7F: return "control character 0x" + String(byte, radix: 16, uppercase: true)
        default: return nil
        }
    }

    static func abbreviate(_ s: String) -> String {
        s.utf8.count > 100 ? String(s.prefix(80)) + "…" : s
    }

    static func printable(_ s: String) -> String {
        var out = ""
        for scalar in abbreviate(s).unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F {
                out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// The int32 value of an integer-like key, nil for a string key.
    public static func integerValue(_ key: String) -> Int32? {
        var utf8 = key.utf8[...]
        var negative = false
        if utf8.first == UInt8(ascii: "-") {
            negative = true
            utf8 = utf8.dropFirst()
        }
        guard !utf8.isEmpty else { return nil }
        var significant = 0
        var value: Int64 = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            if significant > 0 || byte != UInt8(ascii: "0") { significant += 1 }
            guard significant <= 10 else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        if negative { value = -value }
        guard value >= Int64(Int32.min), value <= Int64(Int32.max) else { return nil }
        return Int32(value)
    }

    /// Firebase key order; negative, zero or positive like `strcmp`.
    public static func compare(_ a: String, _ b: String) -> Int {
        let ia = integerValue(a)
        let ib = integerValue(b)
        switch (ia, ib) {
        case (let x?, let y?):
            if x != y { return x < y ? -1 : 1 }
            let la = a.utf8.count
            let lb = b.utf8.count
            if la != lb { return la < lb ? -1 : 1 }
            return compareUTF16Order(a, b)
        case (.some, .none): return -1
        case (.none, .some): return 1
        case (.none, .none): return compareUTF16Order(a, b)
        }
    }

    public static func lessThan(_ a: String, _ b: String) -> Bool { compare(a, b) < 0 }

    /// UTF-16 code-unit order computed over UTF-8 bytes: lead bytes 0xEE and 0xEF (U+E000 to
    /// U+FFFF) rank above the 4-byte leads (U+10000 and up, surrogates in UTF-16). No other
    /// byte differs: continuation bytes are below 0xC0 and 0xF5/0xF6 never occur in UTF-8.
    public static func compareUTF16Order(_ a: String, _ b: String) -> Int {
        // Native strings: compare their UTF-8 in place; only the first differing byte needs
        // the rank.
        if let order = a.utf8.withContiguousStorageIfAvailable({ a in
            b.utf8.withContiguousStorageIfAvailable { b -> Int in
                let n = min(a.count, b.count)
                var i = 0
                while i < n, a[i] == b[i] { i += 1 }
                if i < n { return utf16OrderRank(a[i]) < utf16OrderRank(b[i]) ? -1 : 1 }
                return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
            }
        }), let order {
            return order
        }
        var ai = a.utf8.makeIterator()
        var bi = b.utf8.makeIterator()
        while true {
            switch (ai.next(), bi.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let x?, let y?):
                if x != y { return utf16OrderRank(x) < utf16OrderRank(y) ? -1 : 1 }
            }
        }
    }

    @inline(__always)
    public static func utf16OrderRank(_ byte: UInt8) -> UInt8 {
        (byte == 0xEE || byte == 0xEF) ? byte &+ 7 : byte
    }
}
