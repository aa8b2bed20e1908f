#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Firebase push IDs (firebase-js-sdk core/util/NextPushId.ts): 8 characters of millisecond
// timestamp, most significant first, then 12 random characters, over an alphabet whose ASCII
// order is its numeric order.
//
// Invariant: every ID returned is strictly greater than the previous one and than the ID the
// generator was seeded with (`after:`), even when the clock steps back. Firebase reuses the
// previous random part plus one only within the same millisecond; this generator also does so
// whenever the clock reads earlier than the last ID's timestamp, which is what keeps log IDs
// increasing across restarts and clock steps.

public protocol MillisecondClock: Sendable {
    func nowMilliseconds() -> UInt64
}

public struct SystemMillisecondClock: MillisecondClock {
    public init() {}
    public func nowMilliseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
    }
}

public struct PushIDGenerator {
    public static let length = 20
    public static let alphabet: [UInt8] = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)
    private static let values: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = Int8(i) }
        return table
    }()

    public static func digitValue(_ byte: UInt8) -> Int? {
        let v = values[Int(byte)]
        return v < 0 ? nil : Int(v)
    }

    private var lastTimestamp: UInt64 = 0
    private var lastRandom: [UInt8] = []  // 12 digits 0..<64, empty before the first ID
    private var random: any RandomNumberGenerator

    /// - Parameter after: the greatest ID already issued (e.g. the last log key on disk).
    public init(after last: LogID? = nil, random: any RandomNumberGenerator = SystemRandomNumberGenerator()) {
        self.random = random
        if let last {
            self.lastTimestamp = last.timestampMilliseconds
            self.lastRandom = last.rawValue.utf8.dropFirst(8).map { UInt8(Self.digitValue($0)!) }
        }
    }

    public mutating func next(nowMilliseconds now: UInt64) -> LogID {
        precondition(now < 1 << 48, "timestamp \(now) does not fit 8 push-ID characters")
        if now > self.lastTimestamp || self.lastRandom.isEmpty {
            self.lastTimestamp = max(now, self.lastTimestamp)
            var digits = [UInt8](repeating: 0, count: 12)
            var bits = self.random.next() as UInt64
            for i in 0..<12 {
                if i == 10 { bits = self.random.next() }
                digits[i] = UInt8(truncatingIfNeeded: bits & 63)
                bits >>= 6
            }
            self.lastRandom = digits
        } else {
            // Same or earlier millisecond: previous random part plus one, carrying into the
            // timestamp if all 12 digits were 63.
            var i = 11
            while i >= 0, self.lastRandom[i] == 63 {
                self.lastRandom[i] = 0
                i -= 1
            }
            if i >= 0 { self.lastRandom[i] += 1 } else { self.lastTimestamp += 1 }
        }
        var chars = [UInt8](repeating: 0, count: Self.length)
        var ts = self.lastTimestamp
        for i in stride(from: 7, through: 0, by: -1) {
            chars[i] = Self.alphabet[Int(ts % 64)]
            ts /= 64
        }
        for i in 0..<12 { chars[8 + i] = Self.alphabet[Int(self.lastRandom[i])] }
        return LogID(validated: String(decoding: chars, as: UTF8.self))
    }
}
