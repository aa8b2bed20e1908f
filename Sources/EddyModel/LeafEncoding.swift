// Compact binary encoding of a primitive stored as one `tree` record value.
//
// Grammar:
//   leaf = 0x01                      false
//        | 0x02                      true
//        | 0x03 u64le(IEEE bits)     number
//        | 0x04 utf8...              string (the rest of the record)
//        | 0x05 u64le(two's complement) wide integer (an Int64 a Double cannot hold exactly;
//                                    storage format 5)
// Objects and null are never stored as leaves.

public enum LeafEncoding {
    public static func encode(_ value: Value) -> [UInt8] {
        switch value {
        case .bool(false): return [0x01]
        case .bool(true): return [0x02]
        case .number(let n):
            // Validation and server-value resolution admit finite numbers only; -0 is stored
            // as +0, which is what its JSON ("0") in the log replays to.
            precondition(n.isFinite, "LeafEncoding.encode called with a non-finite number")
            var out: [UInt8] = [0x03]
            let bits = (n == 0 ? 0.0 : n).bitPattern
            for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
            return out
        case .wideInteger(let n):
            var out: [UInt8] = [0x05]
            let bits = UInt64(bitPattern: n)
            for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
            return out
        case .string(let s):
            var out: [UInt8] = [0x04]
            out.append(contentsOf: s.utf8)
            return out
        case .null, .object:
            preconditionFailure("LeafEncoding.encode called with a non-primitive")
        }
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(EddyError) -> Value {
        guard let tag = bytes.first else { throw EddyError(.corruption, "empty leaf record") }
        switch tag {
        case 0x01 where bytes.count == 1: return .bool(false)
        case 0x02 where bytes.count == 1: return .bool(true)
        case 0x03 where bytes.count == 9:
            var bits: UInt64 = 0
            for i in 0..<8 { bits |= UInt64(bytes[1 + i]) << UInt64(8 * i) }
            let n = Double(bitPattern: bits)
            guard n.isFinite else { throw EddyError(.corruption, "non-finite number in leaf record") }
            return .number(n)
        case 0x05 where bytes.count == 9:
            var bits: UInt64 = 0
            for i in 0..<8 { bits |= UInt64(bytes[1 + i]) << UInt64(8 * i) }
            let value = Value.integer(Int64(bitPattern: bits))
            guard case .wideInteger = value else { throw EddyError(.corruption, "wide integer record holds \(bits), which a number record holds") }
            return value
        case 0x04:
            guard let s = String(validating: UnsafeRawBufferPointer(rebasing: bytes[1...]), as: UTF8.self) else {
                throw EddyError(.corruption, "invalid UTF-8 in leaf record")
            }
            return .string(s)
        default:
            throw EddyError(.corruption, "malformed leaf record (tag 0x\(String(tag, radix: 16)), \(bytes.count) bytes)")
        }
    }

    public static func decode(_ bytes: [UInt8]) throws(EddyError) -> Value {
        do {
            return try bytes.withUnsafeBytes { try decode($0) }
        } catch let error as EddyError {
            throw error
        } catch {
            throw EddyError(.internal, "\(error)")
        }
    }
}
