// The identifier of one operation-log entry: a 20-character push ID. Bytewise (= string)
// order is commit order. The push ID of a POST's new child is the log ID of the entry that
// created it.

public struct LogID: Comparable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    /// Accepts exactly 20 characters of the push-ID alphabet.
    public init?(_ rawValue: String) {
        guard rawValue.utf8.count == PushIDGenerator.length,
            rawValue.utf8.allSatisfy({ PushIDGenerator.digitValue($0) != nil })
        else { return nil }
        self.rawValue = rawValue
    }

    init(validated rawValue: String) {
        self.rawValue = rawValue
    }

    /// Milliseconds since the Unix epoch encoded in the first 8 characters.
    public var timestampMilliseconds: UInt64 {
        var value: UInt64 = 0
        for byte in self.rawValue.utf8.prefix(8) { value = value << 6 | UInt64(PushIDGenerator.digitValue(byte)!) }
        return value
    }

    /// The smallest id with this timestamp: every entry committed at or after `milliseconds`
    /// sorts at or after it.
    public static func first(atMilliseconds milliseconds: UInt64) -> LogID {
        var bytes = [UInt8](repeating: PushIDGenerator.alphabet[0], count: PushIDGenerator.length)
        var value = milliseconds
        for i in stride(from: 7, through: 0, by: -1) {
            bytes[i] = PushIDGenerator.alphabet[Int(value & 63)]
            value >>= 6
        }
        return LogID(validated: String(decoding: bytes, as: UTF8.self))
    }

    public static func < (a: LogID, b: LogID) -> Bool {
        a.rawValue.utf8.lexicographicallyPrecedes(b.rawValue.utf8)
    }

    public var description: String { self.rawValue }
}
