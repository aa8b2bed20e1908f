// CRC-32C (Castagnoli), the checksum of log entries: reflected polynomial 0x82F63B78,
// slicing-by-8 tables (8 bytes per step; the log checksum is on the committer's hot path).
// `CRC32CTests` pins the standard check value ("123456789" -> 0xE3069283).

public enum CRC32C {
    /// tables[k][b]: the CRC of byte b followed by k zero bytes.
    @usableFromInline
    static let tables: [[UInt32]] = {
        var tables = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = c & 1 != 0 ? 0x82F6_3B78 ^ (c >> 1) : c >> 1 }
            tables[0][i] = c
        }
        for i in 0..<256 {
            for k in 1..<8 { tables[k][i] = (tables[k - 1][i] >> 8) ^ tables[0][Int(tables[k - 1][i] & 0xFF)] }
        }
        return tables
    }()

    public static func checksum(_ bytes: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
        var crc = ~seed
        var index = 0
        let count = bytes.count
        let t = tables
        t[0].withUnsafeBufferPointer { t0 in
            t[1].withUnsafeBufferPointer { t1 in
                t[2].withUnsafeBufferPointer { t2 in
                    t[3].withUnsafeBufferPointer { t3 in
                        t[4].withUnsafeBufferPointer { t4 in
                            t[5].withUnsafeBufferPointer { t5 in
                                t[6].withUnsafeBufferPointer { t6 in
                                    t[7].withUnsafeBufferPointer { t7 in
                                        while count - index >= 8 {
                                            let lo = crc ^ (UInt32(bytes[index]) | UInt32(bytes[index + 1]) << 8
                                                | UInt32(bytes[index + 2]) << 16 | UInt32(bytes[index + 3]) << 24)
                                            let hi = UInt32(bytes[index + 4]) | UInt32(bytes[index + 5]) << 8
                                                | UInt32(bytes[index + 6]) << 16 | UInt32(bytes[index + 7]) << 24
                                            crc = t7[Int(lo & 0xFF)] ^ t6[Int((lo >> 8) & 0xFF)]
                                                ^ t5[Int((lo >> 16) & 0xFF)] ^ t4[Int(lo >> 24)]
                                                ^ t3[Int(hi & 0xFF)] ^ t2[Int((hi >> 8) & 0xFF)]
                                                ^ t1[Int((hi >> 16) & 0xFF)] ^ t0[Int(hi >> 24)]
                                            index += 8
                                        }
                                        while index < count {
                                            crc = t0[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc >> 8)
                                            index += 1
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        return ~crc
    }

    public static func checksum(_ bytes: [UInt8], seed: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, seed: seed) }
    }

    public static func checksum(_ bytes: ArraySlice<UInt8>, seed: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, seed: seed) }
    }

    public static func checksum(_ bytes: some Sequence<UInt8>, seed: UInt32 = 0) -> UInt32 {
        checksum(Array(bytes), seed: seed)
    }
}
