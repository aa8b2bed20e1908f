// The payload of a `snapshotChunk` frame: a run of snapshot records, zstd-compressed, with a
// checksum of the uncompressed bytes that the follower verifies before writing any of them.
//
//   payload = u32be(crc32c(raw)) u32be(raw length) zstd(raw)
//   raw     = record*
//   record  = u8(family) u32be(key length) key u32be(value length) value

import CZstd
import EddyEngine
import EddyModel
import EddyProtocol

enum SnapshotChunk {
    /// zstd level: fast, the stream is usually local.
    static let level: Int32 = 3

    static func encode(_ records: [EngineSnapshotReader.Record]) -> [UInt8] {
        var raw: [UInt8] = []
        raw.reserveCapacity(records.reduce(0) { $0 + $1.key.count + $1.value.count + 9 })
        for record in records {
            raw.append(record.family)
            BigEndian.append(UInt32(record.key.count), to: &raw)
            raw += record.key
            BigEndian.append(UInt32(record.value.count), to: &raw)
            raw += record.value
        }
        var out: [UInt8] = []
        BigEndian.append(CRC32C.checksum(raw), to: &out)
        BigEndian.append(UInt32(raw.count), to: &out)
        let bound = ZSTD_compressBound(raw.count)
        var compressed = [UInt8](repeating: 0, count: bound)
        let written = compressed.withUnsafeMutableBytes { destination in
            raw.withUnsafeBytes { source in ZSTD_compress(destination.baseAddress, bound, source.baseAddress, raw.count, Self.level) }
        }
        precondition(ZSTD_isError(written) == 0, "zstd could not compress a snapshot chunk")
        out += compressed.prefix(written)
        return out
    }

    static func decode(_ payload: [UInt8]) throws(ProtocolError) -> [EngineSnapshotReader.Record] {
        guard payload.count >= 8 else { throw ProtocolError("snapshot chunk of \(payload.count) bytes is truncated") }
        let expected = BigEndian.uint32(payload, at: 0)
        let rawLength = Int(BigEndian.uint32(payload, at: 4))
        guard rawLength <= Frame.bytesMax * 8 else { throw ProtocolError("snapshot chunk claims \(rawLength) bytes uncompressed") }
        var raw = [UInt8](repeating: 0, count: rawLength)
        let produced = raw.withUnsafeMutableBytes { destination in
            payload.withUnsafeBytes { source in
                ZSTD_decompress(destination.baseAddress, rawLength, source.baseAddress! + 8, payload.count - 8)
            }
        }
        guard ZSTD_isError(produced) == 0, produced == rawLength else {
            throw ProtocolError("snapshot chunk does not decompress to its \(rawLength) bytes")
        }
        let actual = CRC32C.checksum(raw)
        guard actual == expected else {
            throw ProtocolError("snapshot chunk failed its checksum (crc32c 0x\(String(actual, radix: 16)), expected 0x\(String(expected, radix: 16)))")
        }
        var records: [EngineSnapshotReader.Record] = []
        var i = 0
        while i < raw.count {
            guard i + 5 <= raw.count else { throw ProtocolError("snapshot chunk record truncated") }
            let family = raw[i]
            let keyLength = Int(BigEndian.uint32(raw, at: i + 1))
            i += 5
            guard i + keyLength + 4 <= raw.count else { throw ProtocolError("snapshot chunk record truncated") }
            let key = Array(raw[i..<(i + keyLength)])
            i += keyLength
            let valueLength = Int(BigEndian.uint32(raw, at: i))
            i += 4
            guard i + valueLength <= raw.count else { throw ProtocolError("snapshot chunk record truncated") }
            records.append(EngineSnapshotReader.Record(family: family, key: key, value: Array(raw[i..<(i + valueLength)])))
            i += valueLength
        }
        return records
    }
}
