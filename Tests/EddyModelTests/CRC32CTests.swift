// CRC-32C (Castagnoli): the standard check value, the RFC 3720 test vectors and seed chaining.

import EddyModel
import EddyTesting
import Testing

@Suite struct CRC32CTests {
    @Test func checkValue() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
    }

    @Test func rfc3720Vectors() {
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum(Array(UInt8(0)..<32)) == 0x46DD_794E)
        #expect(CRC32C.checksum(Array((UInt8(0)..<32).reversed())) == 0x113F_DB5C)
    }

    @Test func emptyInputIsZero() {
        #expect(CRC32C.checksum([UInt8]()) == 0)
        #expect(CRC32C.checksum([UInt8](), seed: 0x1234_5678) == 0x1234_5678)
    }

    @Test func seedChainsAcrossChunks() {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<200 {
            let bytes = (0..<g.int(in: 0...300)).map { _ in UInt8.random(in: .min ... .max, using: &g) }
            let split = g.int(in: 0...bytes.count)
            let whole = CRC32C.checksum(bytes)
            let chained = CRC32C.checksum(bytes[split...], seed: CRC32C.checksum(bytes[..<split]))
            #expect(whole == chained, Comment("seed \(seed)"))
        }
    }

    @Test func detectsEverySingleBitFlip() {
        let bytes = Array("a log entry".utf8)
        let original = CRC32C.checksum(bytes)
        for index in bytes.indices {
            for bit in 0..<8 {
                var flipped = bytes
                flipped[index] ^= 1 << bit
                #expect(CRC32C.checksum(flipped) != original)
            }
        }
    }
}
