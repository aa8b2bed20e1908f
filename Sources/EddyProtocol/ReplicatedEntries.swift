// The payload of a replication `entries` frame: log entries in log order, each as the leader
// stores it, with a checksum the follower verifies before applying anything of the frame.
//
//   payload = entry*
//   entry   = u8(id length) id(UTF-8) u32be(n) bytes[n] u32be(crc32c(id ++ bytes))
//
// `bytes` is the entry's stored encoding (EddyEngine's LogEntryCodec); the protocol does not
// look inside it.

import EddyModel

public enum ReplicatedEntries {
    public static func encode(_ entries: [(id: String, bytes: [UInt8])]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(entries.reduce(0) { $0 + $1.id.utf8.count + $1.bytes.count + 9 })
        for entry in entries {
            let id = Array(entry.id.utf8)
            out.append(UInt8(id.count))
            out += id
            BigEndian.append(UInt32(entry.bytes.count), to: &out)
            out += entry.bytes
            BigEndian.append(CRC32C.checksum(entry.bytes, seed: CRC32C.checksum(id)), to: &out)
        }
        return out
    }

    /// The entries of a payload; throws naming the first entry whose checksum or framing is
    /// wrong (nothing of the frame may then be applied).
    public static func decode(_ payload: [UInt8]) throws(ProtocolError) -> [(id: String, bytes: [UInt8])] {
        var entries: [(id: String, bytes: [UInt8])] = []
        var i = 0
        while i < payload.count {
            let idLength = Int(payload[i])
            guard i + 1 + idLength + 4 <= payload.count else { throw ProtocolError("entries frame truncated after \(entries.count) entries") }
            let id = Array(payload[(i + 1)..<(i + 1 + idLength)])
            i += 1 + idLength
            let n = Int(BigEndian.uint32(payload, at: i))
            i += 4
            guard i + n + 4 <= payload.count else { throw ProtocolError("entries frame truncated in entry \(String(decoding: id, as: UTF8.self))") }
            let bytes = Array(payload[i..<(i + n)])
            i += n
            let expected = BigEndian.uint32(payload, at: i)
            i += 4
            let actual = CRC32C.checksum(bytes, seed: CRC32C.checksum(id))
            guard actual == expected else {
                throw ProtocolError(
                    "entry \(String(decoding: id, as: UTF8.self)) failed its checksum (crc32c 0x\(String(actual, radix: 16)), expected 0x\(String(expected, radix: 16))); nothing of this frame was applied"
                )
            }
            entries.append((String(decoding: id, as: UTF8.self), bytes))
        }
        return entries
    }
}
