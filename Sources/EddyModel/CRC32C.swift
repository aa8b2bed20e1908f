// CRC-32C (Castagnoli), the checksum of log entries. Table-driven, reflected polynomial
// 0x82F63B78; `CRC32CTests` pins the standard check value ("123456789" -> 0xE3069283).

public enum CRC32C {
    private static let table: [UInt32] = (0..<256).map { i in
        var c = UInt32(i)
        for _ in 0..<8 { c = c & 1 != 0 ? 0x82F6_3B78 ^ (c >> 1) : c >> 1 }
        return c
    }

    public static func checksum(_ bytes: some Sequence<UInt8>, seed: UInt32 = 0) -> UInt32 {
        var crc = ~seed
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return ~crc
    }
}
