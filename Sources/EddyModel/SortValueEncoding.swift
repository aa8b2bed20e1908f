// Order-preserving byte encoding of sort values for index keys: bytewise order of encodings
// equals `ValueOrder.compare`, and each encoding is self-terminating so a key can follow it.
//
// Grammar:
//   sortvalue = 0x10                    null (and missing)
//             | 0x20                    false
//             | 0x21                    true
//             | 0x30 u64be(ordered bits) number: -0 is stored as +0; negative numbers have all
//                                       bits flipped, others only the sign bit
//             | 0x30 u64be(ordered bits of t) 0xFF u64be(n - t)
//                                       wide integer n (storage format 5): t is the largest
//                                       Double below n, and 0xFF sorts after whatever follows a
//                                       plain number (a key segment, 0x01 or 0x02; a bound's
//                                       0xFF, a prefix of it), so n sorts after t and before the
//                                       next Double, and wide integers between them by n
//             | 0x40 escaped 0x00 0x01  string: rank-mapped UTF-8 (`Key.utf16OrderRank`),
//                                       0x00 escaped as 0x00 0xFF
//             | 0x50                    object (all objects tie)

public enum SortValueEncoding {
    public static func append(_ value: Value, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(0x10)
        case .bool(false): out.append(0x20)
        case .bool(true): out.append(0x21)
        case .wideInteger(let n):
            var below = Double(n)
            if ValueOrder.compareExactly(n, below) <= 0 { below = below.nextDown }
            append(.number(below), to: &out)
            out.append(0xFF)
            let offset = UInt64(n - Int64(below))  // 1 ... 2048: two Doubles beyond 2^53 are 2 to 2048 apart
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: offset >> UInt64(shift))) }
        case .number(let n):
            out.append(0x30)
            let bits = (n == 0 ? 0.0 : n).bitPattern
            let ordered = bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: ordered >> UInt64(shift))) }
        case .string(let s):
            out.append(0x40)
            for byte in s.utf8 {
                if byte == 0 {
                    out.append(0x00)
                    out.append(0xFF)
                } else {
                    out.append(Key.utf16OrderRank(byte))
                }
            }
            out.append(0x00)
            out.append(0x01)
        case .object: out.append(0x50)
        }
    }

    public static func encode(_ value: Value) -> [UInt8] {
        var out: [UInt8] = []
        append(value, to: &out)
        return out
    }

    /// Decodes one sort value from the front of `bytes` and removes it. Objects decode as an
    /// empty-marker `.object([:])`: the index keeps their rank, not their content.
    public static func decode(_ bytes: inout ArraySlice<UInt8>) throws(EddyError) -> Value {
        guard let tag = bytes.popFirst() else { throw corrupt("empty") }
        switch tag {
        case 0x10: return .null
        case 0x20: return .bool(false)
        case 0x21: return .bool(true)
        case 0x30:
            guard bytes.count >= 8 else { throw corrupt("short number") }
            var ordered: UInt64 = 0
            for _ in 0..<8 { ordered = ordered << 8 | UInt64(bytes.removeFirst()) }
            let bits = ordered & (1 << 63) != 0 ? ordered & ~(1 << 63) : ~ordered
            let number = Double(bitPattern: bits)
            guard bytes.first == 0xFF else { return .number(number) }
            bytes.removeFirst()
            guard bytes.count >= 8, let below = Int64(exactly: number) else { throw corrupt("malformed wide integer") }
            var offset: UInt64 = 0
            for _ in 0..<8 { offset = offset << 8 | UInt64(bytes.removeFirst()) }
            let (sum, overflow) = below.addingReportingOverflow(Int64(offset & 0xFFFF))
            guard offset >= 1, offset <= 2048, !overflow, case .wideInteger(let n) = Value.integer(sum) else {
                throw corrupt("malformed wide integer")
            }
            return .wideInteger(n)
        case 0x40:
            var raw: [UInt8] = []
            while true {
                guard let byte = bytes.popFirst() else { throw corrupt("unterminated string") }
                if byte == 0x00 {
                    guard let next = bytes.popFirst() else { throw corrupt("truncated escape") }
                    if next == 0x01 { break }
                    guard next == 0xFF else { throw corrupt("bad escape") }
                    raw.append(0)
                } else {
                    raw.append(byte == 0xF5 || byte == 0xF6 ? byte &- 7 : byte)
                }
            }
            guard let s = String(validating: raw, as: UTF8.self) else { throw corrupt("invalid UTF-8") }
            return .string(s)
        case 0x50: return .object([:])
        default: throw corrupt("unknown tag 0x\(String(tag, radix: 16))")
        }
    }

    /// The byte length of the sort value at the front of `bytes` (not decoded).
    public static func length(_ bytes: ArraySlice<UInt8>) throws(EddyError) -> Int {
        guard let length = Self.length(bytes, at: bytes.startIndex) else {
            throw corrupt(bytes.isEmpty ? "empty" : "truncated, or unknown tag 0x\(String(bytes[bytes.startIndex], radix: 16))")
        }
        return length
    }

    /// The byte length of the sort value at `start` in `bytes` (not decoded); nil when it is
    /// cut short or malformed. For index keys read in place (`IndexQueryReader`).
    @inlinable
    public static func length<Bytes: RandomAccessCollection>(_ bytes: Bytes, at start: Int) -> Int?
    where Bytes.Element == UInt8, Bytes.Index == Int {
        guard start < bytes.endIndex else { return nil }
        switch bytes[start] {
        case 0x10, 0x20, 0x21, 0x50: return 1
        case 0x30:
            guard start + 9 <= bytes.endIndex else { return nil }
            guard start + 9 < bytes.endIndex, bytes[start + 9] == 0xFF else { return 9 }
            return start + 18 <= bytes.endIndex ? 18 : nil  // a wide integer
        case 0x40:
            var i = start + 1
            while i + 1 < bytes.endIndex {
                if bytes[i] == 0x00 {
                    if bytes[i + 1] == 0x01 { return i + 2 - start }
                    i += 2
                } else {
                    i += 1
                }
            }
            return nil
        default: return nil
        }
    }

    private static func corrupt(_ what: String) -> EddyError {
        EddyError(.corruption, "malformed sort value: \(what)")
    }
}
