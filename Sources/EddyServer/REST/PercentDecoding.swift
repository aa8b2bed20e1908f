// Percent-decoding for REST paths and query strings. `+` stays a literal plus: firebase-admin
// sends it unencoded (`equal_to("a+b")` arrives as `a+b`), so form-style decoding would
// corrupt values. Invalid escapes and invalid UTF-8 are errors naming the text.

import EddyModel

enum PercentDecoding {
    static func decode(_ text: Substring, what: String) throws(EddyError) -> String {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let hi = iterator.next().flatMap(hexValue), let lo = iterator.next().flatMap(hexValue) else {
                throw EddyError(.invalidArgument, "invalid percent-encoding in \(what) \"\(text)\"")
            }
            bytes.append(hi << 4 | lo)
        }
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw EddyError(.invalidArgument, "\(what) \"\(text)\" is not valid UTF-8 after percent-decoding")
        }
        return string
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
