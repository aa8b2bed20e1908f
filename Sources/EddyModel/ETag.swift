// ETags for conditional REST requests: FNV-1a (128-bit) over the canonical JSON of the value
// in export form (`JSONWriter`, keys in Firebase order, `.priority` members included, so a
// change of priority alone changes the ETag, as Firebase's hash does), as 32 hex digits. Absent data has the ETag
// `null_etag`, as Firebase's REST API answers. Stable across restarts and replicas because the
// canonical JSON is.

public enum ETag {
    public static let null = "null_etag"

    public static func of(_ value: Value) -> String {
        if value.isNull { return null }
        return of(canonicalJSON: JSONWriter.bytes(value))
    }

    public static func of(canonicalJSON bytes: [UInt8]) -> String {
        var hash: UInt128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d
        let prime: UInt128 = 0x0000_0000_0100_0000_0000_0000_0000_013B
        for byte in bytes {
            hash ^= UInt128(byte)
            hash = hash &* prime
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 32 - hex.count) + hex
    }
}
