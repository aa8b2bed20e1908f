// Compact binary encoding of a whole normalized `Value`, for index entries that cover their
// child (a query answers from the index without reading the tree).
//
// Grammar:
//   value  = 0x00                         null
//          | 0x01 | 0x02                  false | true
//          | 0x03 f64 little-endian bits  number
//          | 0x04 varint(len) utf8        string
//          | 0x05 varint(count) (varint(len) utf8-key value){count}   object, keys in
//                                                                       UTF-8 byte order
// Deterministic: equal values encode to equal bytes (-0 is written as +0).
// Decoding nests at most `Limits.pathDepthMax` objects (stored values never nest deeper).

public enum ValueEncoding {
    public static func encode(_ value: Value) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        append(value, to: &out)
        return out
    }

    public static func append(_ value: Value, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(0x00)
        case .bool(let b): out.append(b ? 0x02 : 0x01)
        case .number(let n):
            out.append(0x03)
            let bits = (n == 0 ? 0.0 : n).bitPattern  // -0 as +0, as the tree stores it
            for shift in stride(from: 0, through: 56, by: 8) { out.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        case .string(let s):
            out.append(0x04)
            appendVarint(s.utf8.count, to: &out)
            out.append(contentsOf: s.utf8)
        case .object(let children):
            out.append(0x05)
            appendVarint(children.count, to: &out)
            // Keys in UTF-8 byte order: equal values have equal encodings (entries compare
            // bytewise in verify and across replicas).
            for key in children.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                appendVarint(key.utf8.count, to: &out)
                out.append(contentsOf: key.utf8)
                append(children[key]!, to: &out)
            }
        }
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(EddyError) -> Value {
        var reader = Reader(bytes: bytes, offset: 0)
        let value = try reader.value(depth: 0)
        guard reader.offset == bytes.count else { throw corrupt("\(bytes.count - reader.offset) trailing bytes") }
        return value
    }

    public static func decode(_ bytes: [UInt8]) throws(EddyError) -> Value {
        let result = bytes.withUnsafeBytes { raw -> Result<Value, EddyError> in
            do throws(EddyError) { return .success(try decode(raw)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    private static func appendVarint(_ n: Int, to out: inout [UInt8]) {
        var v = UInt64(n)
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset: Int

        mutating func byte() throws(EddyError) -> UInt8 {
            guard self.offset < self.bytes.count else { throw corrupt("truncated") }
            defer { self.offset += 1 }
            return self.bytes[self.offset]
        }

        mutating func varint() throws(EddyError) -> Int {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let b = try self.byte()
                result |= UInt64(b & 0x7F) << shift
                if b & 0x80 == 0 { break }
                shift += 7
                guard shift < 63 else { throw corrupt("varint too long") }
            }
            guard result <= UInt64(self.bytes.count) else { throw corrupt("length \(result) overruns the entry") }
            return Int(result)
        }

        mutating func string() throws(EddyError) -> String {
            let length = try self.varint()
            guard self.offset + length <= self.bytes.count else { throw corrupt("string overruns the entry") }
            let slice = UnsafeRawBufferPointer(rebasing: self.bytes[self.offset..<(self.offset + length)])
            self.offset += length
            guard let s = String(validating: slice, as: UTF8.self) else { throw corrupt("invalid UTF-8") }
            return s
        }

        mutating func value(depth: Int) throws(EddyError) -> Value {
            switch try self.byte() {
            case 0x00: return .null
            case 0x01: return .bool(false)
            case 0x02: return .bool(true)
            case 0x03:
                guard self.offset + 8 <= self.bytes.count else { throw corrupt("short number") }
                var bits: UInt64 = 0
                for i in 0..<8 { bits |= UInt64(self.bytes[self.offset + i]) << UInt64(8 * i) }
                self.offset += 8
                return .number(Double(bitPattern: bits))
            case 0x04:
                return .string(try self.string())
            case 0x05:
                guard depth < Limits.pathDepthMax else { throw corrupt("nested deeper than pathDepthMax") }
                let count = try self.varint()
                var children: [String: Value] = [:]
                children.reserveCapacity(count)
                for _ in 0..<count {
                    let key = try self.string()
                    children[key] = try self.value(depth: depth + 1)
                }
                return .object(children)
            case let tag:
                throw corrupt("unknown tag 0x\(String(tag, radix: 16))")
            }
        }
    }

    private static func corrupt(_ what: String) -> EddyError {
        EddyError(.corruption, "malformed covered index value: \(what)")
    }
}
