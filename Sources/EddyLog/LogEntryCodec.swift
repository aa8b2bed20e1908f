// The on-disk format of a log entry value (format version 2). Key: the 20-byte log ID.
//
//   entry     = version:u8(=2) kind:u8 timestamp:u64le term:varint location:string
//               changeCount:varint (path:string json:string){changeCount}
//               beforeCount:varint (path:string json:string){beforeCount}
//               crc32c:u32le                ; CRC-32C of every preceding byte
//   string    = length:varint utf8{length}
//   path      = "/"-joined keys, "" for the entry's location (changes) or the root
//   json      = the value as canonical JSON (`JSONWriter`), "null" for nothing
// Values are JSON so the log is readable with `eddy log` and compresses well with zstd.
// Decoding checks the checksum first, then every field; any failure is `corruption`.
// Versions: 1 had no term (it decodes as term 0, the term of a log written outside a cluster);
// 2 added it (storage format 3, replication protocol 2). Entries are encoded as version 2.

import EddyModel

public enum LogEntryCodec {
    public static let formatVersion: UInt8 = 2
    /// Every version this code decodes.
    public static let readableVersions: ClosedRange<UInt8> = 1...2

    public static func encode(_ entry: LogEntry) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        out.append(formatVersion)
        out.append(entry.kind.rawValue)
        for shift in stride(from: 0, to: 64, by: 8) {
            out.append(UInt8(truncatingIfNeeded: entry.timestampMilliseconds >> UInt64(shift)))
        }
        appendVarint(entry.term, to: &out)
        appendPath(entry.location, to: &out)
        appendVarint(UInt64(entry.changes.count), to: &out)
        for change in entry.changes {
            appendPath(change.path, to: &out)
            appendJSON(change.value, to: &out)
        }
        appendVarint(UInt64(entry.before.count), to: &out)
        for image in entry.before {
            appendPath(image.path, to: &out)
            appendJSON(image.value, to: &out)
        }
        let crc = CRC32C.checksum(out)
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
        return out
    }

    public static func decode(id: LogID, _ bytes: [UInt8]) throws(EddyError) -> LogEntry {
        guard bytes.count >= 4 + 10 else { throw corrupt(id, "entry is \(bytes.count) bytes, too short") }
        let body = bytes[..<(bytes.count - 4)]
        var stored: UInt32 = 0
        for i in 0..<4 { stored |= UInt32(bytes[bytes.count - 4 + i]) << UInt32(8 * i) }
        let computed = CRC32C.checksum(body)
        guard stored == computed else {
            throw corrupt(id, "checksum mismatch (stored \(hex(stored)), computed \(hex(computed)))")
        }
        var reader = ByteReader(bytes: body)
        guard let version = reader.byte(), readableVersions.contains(version) else {
            throw corrupt(id, "unknown entry format version")
        }
        guard let kindByte = reader.byte(), let kind = LogEntry.Kind(rawValue: kindByte) else {
            throw corrupt(id, "unknown entry kind")
        }
        guard let timestamp = reader.uint64le() else { throw corrupt(id, "truncated timestamp") }
        var term: UInt64 = 0
        if version >= 2 {
            guard let stored = reader.varint() else { throw corrupt(id, "truncated term") }
            term = stored
        }
        let location = try path(reader.string(), id: id)
        var changes: [LogEntry.Change] = []
        let changeCount = try count(reader.varint(), id: id)
        for _ in 0..<changeCount {
            let p = try path(reader.string(), id: id)
            changes.append(.init(path: p, value: try value(reader.bytes(), id: id)))
        }
        var before: [LogEntry.BeforeImage] = []
        let beforeCount = try count(reader.varint(), id: id)
        for _ in 0..<beforeCount {
            let p = try path(reader.string(), id: id)
            before.append(.init(path: p, value: try value(reader.bytes(), id: id)))
        }
        guard reader.isAtEnd else { throw corrupt(id, "trailing bytes") }
        return LogEntry(
            id: id, kind: kind, timestampMilliseconds: timestamp, location: location, changes: changes, before: before, term: term)
    }

    private static func count(_ raw: UInt64?, id: LogID) throws(EddyError) -> Int {
        // Each change has its own image, plus one of a primitive ancestor or of each ancestor
        // it emptied that had a priority (at most one per level).
        guard let raw, raw <= UInt64(Limits.updatePathsCountMax) * UInt64(Limits.pathDepthMax + 2) + 2 else {
            throw corrupt(id, "bad count")
        }
        return Int(raw)
    }

    private static func path(_ raw: String?, id: LogID) throws(EddyError) -> Path {
        guard let raw else { throw corrupt(id, "truncated path") }
        do {
            return try Path(allowingPriority: raw)
        } catch {
            throw corrupt(id, "invalid path: \(error.message)")
        }
    }

    private static func value(_ raw: ArraySlice<UInt8>?, id: LogID) throws(EddyError) -> Value {
        guard let raw else { throw corrupt(id, "truncated value") }
        do {
            return try JSONParser.parse(raw).normalized()
        } catch {
            throw corrupt(id, "invalid value: \(error.message)")
        }
    }

    private static func corrupt(_ id: LogID, _ what: String) -> EddyError {
        EddyError(.corruption, "log entry \(id) is corrupt: \(what)")
    }

    private static func hex(_ v: UInt32) -> String { "0x" + String(v, radix: 16) }

    static func appendVarint(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    static func appendString(_ s: String, to out: inout [UInt8]) {
        appendVarint(UInt64(s.utf8.count), to: &out)
        out.append(contentsOf: s.utf8)
    }

    /// `string` of the "/"-joined keys, written without building the joined String.
    static func appendPath(_ path: Path, to out: inout [UInt8]) {
        appendVarint(UInt64(path.byteCount), to: &out)
        for (i, key) in path.keys.enumerated() {
            if i > 0 { out.append(UInt8(ascii: "/")) }
            out.append(contentsOf: key.utf8)
        }
    }

    /// `json` of a value; the frequent `null` (before-image of a new child) without rendering.
    static func appendJSON(_ value: Value, to out: inout [UInt8]) {
        switch value {
        case .null:
            out.append(4)
            out.append(contentsOf: "null".utf8)
        default:
            let json = JSONWriter.bytes(value)
            appendBytes(json, to: &out)
        }
    }

    static func appendBytes(_ b: [UInt8], to out: inout [UInt8]) {
        appendVarint(UInt64(b.count), to: &out)
        out.append(contentsOf: b)
    }
}

/// Reads the primitives of the log format; every read returns nil past the end.
struct ByteReader {
    let data: ArraySlice<UInt8>
    var index: Int

    init(bytes: ArraySlice<UInt8>) {
        self.data = bytes
        self.index = bytes.startIndex
    }

    var isAtEnd: Bool { self.index == self.data.endIndex }

    mutating func byte() -> UInt8? {
        guard self.index < self.data.endIndex else { return nil }
        defer { self.index += 1 }
        return self.data[self.index]
    }

    mutating func uint64le() -> UInt64? {
        guard self.data.endIndex - self.index >= 8 else { return nil }
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(self.data[self.index + i]) << UInt64(8 * i) }
        self.index += 8
        return v
    }

    mutating func varint() -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while let b = self.byte() {
            result |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return result }
            shift += 7
            if shift > 63 { return nil }
        }
        return nil
    }

    mutating func bytes() -> ArraySlice<UInt8>? {
        guard let length = self.varint(), length <= UInt64(self.data.endIndex - self.index) else { return nil }
        defer { self.index += Int(length) }
        return self.data[self.index..<(self.index + Int(length))]
    }

    mutating func string() -> String? {
        guard let raw = self.bytes() else { return nil }
        return String(validating: raw, as: UTF8.self)
    }
}
