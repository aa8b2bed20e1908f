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
            record.key.withUnsafeBytes { key in
                record.value.withUnsafeBytes { value in Self.append(family: record.family, key: key, value: value, to: &raw) }
            }
        }
        return Self.compress(raw)
    }

    /// The next chunk of about `bytesMax` bytes straight from `reader` (no record copied on the
    /// way) and how many records it holds; nil at the end of the snapshot.
    static func encode(from reader: EngineSnapshotReader, bytesMax: Int) throws(EddyError) -> (payload: [UInt8], records: Int)? {
        var raw: [UInt8] = []
        raw.reserveCapacity(bytesMax + 64 * 1024)
        let count = try reader.next(bytesMax: bytesMax) { family, key, value in Self.append(family: family, key: key, value: value, to: &raw) }
        guard count > 0 else { return nil }
        return (Self.compress(raw), count)
    }

    private static func append(family: UInt8, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, to raw: inout [UInt8]) {
        raw.append(family)
        BigEndian.append(UInt32(key.count), to: &raw)
        raw.append(contentsOf: key)
        BigEndian.append(UInt32(value.count), to: &raw)
        raw.append(contentsOf: value)
    }

    private static func compress(_ raw: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        BigEndian.append(CRC32C.checksum(raw), to: &out)
        BigEndian.append(UInt32(raw.count), to: &out)
        let bound = ZSTD_compressBound(raw.count)
        out.reserveCapacity(8 + bound)
        let headerBytes = out.count
        out.append(contentsOf: repeatElement(0, count: bound))
        let written = out.withUnsafeMutableBytes { destination in
            raw.withUnsafeBytes { source in ZSTD_compress(destination.baseAddress! + headerBytes, bound, source.baseAddress, raw.count, Self.level) }
        }
        precondition(ZSTD_isError(written) == 0, "zstd could not compress a snapshot chunk")
        out.removeLast(bound - written)
        return out
    }

    static func decode(_ payload: [UInt8]) throws(ProtocolError) -> [EngineSnapshotReader.Record] {
        let raw = try Self.verified(payload)
        var records: [EngineSnapshotReader.Record] = []
        do {
            try Self.walk(raw) { family, key, value in
                records.append(EngineSnapshotReader.Record(family: family, key: Array(key), value: Array(value)))
            }
        } catch {
            throw ProtocolError(error.message)
        }
        return records
    }

    /// Checks the chunk (size, decompression, checksum), then hands `body` each record in place
    /// (the buffers are valid during the call only) and returns how many. A malformed chunk
    /// throws `.corruption` ("snapshot chunk rejected: ..."), before any record when the
    /// checksum fails, and after some when a record is truncated (the caller drops the whole
    /// snapshot then); `body`'s own errors pass through.
    @discardableResult
    static func decode(
        _ payload: [UInt8], _ body: (UInt8, UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws(EddyError) -> Void
    ) throws(EddyError) -> Int {
        let raw: [UInt8]
        do {
            raw = try Self.verified(payload)
        } catch {
            throw EddyError(.corruption, "snapshot chunk rejected: \(error.message)")
        }
        return try Self.walk(raw, body)
    }

    /// The uncompressed records of a chunk whose checksum holds.
    private static func verified(_ payload: [UInt8]) throws(ProtocolError) -> [UInt8] {
        guard payload.count >= 8 else { throw ProtocolError("snapshot chunk of \(payload.count) bytes is truncated") }
        let expected = BigEndian.uint32(payload, at: 0)
        let rawLength = Int(BigEndian.uint32(payload, at: 4))
        guard rawLength <= 2 * Frame.fromServerBytesMax else { throw ProtocolError("snapshot chunk claims \(rawLength) bytes uncompressed") }
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
        return raw
    }

    private static func walk(
        _ raw: [UInt8], _ body: (UInt8, UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws(EddyError) -> Void
    ) throws(EddyError) -> Int {
        // `withUnsafeBytes` does not forward a typed error: the first one is kept and thrown after.
        var failure: EddyError?
        let count = raw.withUnsafeBytes { bytes -> Int in
            var count = 0
            var i = 0
            while i < bytes.count {
                guard i + 5 <= bytes.count else { break }
                let family = bytes[i]
                let keyLength = Int(BigEndian.uint32(raw, at: i + 1))
                guard i + 5 + keyLength + 4 <= bytes.count else { break }
                let key = UnsafeRawBufferPointer(rebasing: bytes[(i + 5)..<(i + 5 + keyLength)])
                let valueLength = Int(BigEndian.uint32(raw, at: i + 5 + keyLength))
                let valueStart = i + 5 + keyLength + 4
                guard valueStart + valueLength <= bytes.count else { break }
                do throws(EddyError) {
                    try body(family, key, UnsafeRawBufferPointer(rebasing: bytes[valueStart..<(valueStart + valueLength)]))
                } catch {
                    failure = error
                    return count
                }
                i = valueStart + valueLength
                count += 1
            }
            if i < bytes.count { failure = EddyError(.corruption, "snapshot chunk rejected: snapshot chunk record truncated") }
            return count
        }
        if let failure { throw failure }
        return count
    }
}
