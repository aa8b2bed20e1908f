// The seeded PRNG behind every property test, plus the run settings read from the environment
// (`EDDY_SEED`, `EDDY_EVENTS_MAX`). A failing run prints its seed; rerun with `EDDY_SEED=<seed>`.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// xoshiro256** (Blackman and Vigna), its state expanded from the seed with SplitMix64 as the
/// authors recommend. The same seed gives the same sequence on every platform.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    public let seed: UInt64
    private var state: (UInt64, UInt64, UInt64, UInt64)

    public init(seed: UInt64) {
        self.seed = seed
        var splitMix = seed
        func nextSplitMix() -> UInt64 {
            splitMix &+= 0x9E37_79B9_7F4A_7C15
            var z = splitMix
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        self.state = (nextSplitMix(), nextSplitMix(), nextSplitMix(), nextSplitMix())
        // SplitMix64 never yields four zeros in a row, and xoshiro only needs one non-zero word.
        precondition(self.state != (0, 0, 0, 0))
    }

    public mutating func next() -> UInt64 {
        let result = rotateLeft(self.state.1 &* 5, 7) &* 9
        let t = self.state.1 << 17
        self.state.2 ^= self.state.0
        self.state.3 ^= self.state.1
        self.state.1 ^= self.state.2
        self.state.0 ^= self.state.3
        self.state.2 ^= t
        self.state.3 = rotateLeft(self.state.3, 45)
        return result
    }

    private func rotateLeft(_ x: UInt64, _ k: UInt64) -> UInt64 {
        (x << k) | (x >> (64 - k))
    }

    /// A uniformly distributed integer in `range`, which must not be empty.
    public mutating func int(in range: Range<Int>) -> Int {
        precondition(!range.isEmpty, "int(in:) needs a non-empty range")
        return Int.random(in: range, using: &self)
    }

    /// A uniformly distributed integer in `range`.
    public mutating func int(in range: ClosedRange<Int>) -> Int {
        Int.random(in: range, using: &self)
    }

    public mutating func bool() -> Bool {
        self.next() & 1 == 1
    }

    /// True with probability `numerator / denominator`.
    public mutating func chance(_ numerator: Int, in denominator: Int) -> Bool {
        precondition(denominator > 0)
        return self.int(in: 0..<denominator) < numerator
    }

    /// A uniformly chosen element of `collection`, which must not be empty.
    public mutating func element<C: Collection>(of collection: C) -> C.Element {
        precondition(!collection.isEmpty, "element(of:) needs a non-empty collection")
        let offset = self.int(in: 0..<collection.count)
        return collection[collection.index(collection.startIndex, offsetBy: offset)]
    }

    /// `EDDY_SEED` (decimal) when set, else a fresh random seed. Print it with any failure.
    public static func seedFromEnvironment() -> UInt64 {
        if let text = environment("EDDY_SEED") {
            guard let seed = UInt64(text) else {
                preconditionFailure("EDDY_SEED must be a decimal UInt64, got \"\(text)\"")
            }
            return seed
        }
        var system = SystemRandomNumberGenerator()
        return system.next()
    }

    /// Iterations for a property test: `EDDY_EVENTS_MAX` (decimal, > 0) when set, else
    /// `defaultCount` (a short smoke run for `swift test`; `make fuzz` sets it high).
    public static func eventsMaxFromEnvironment(default defaultCount: Int) -> Int {
        if let text = environment("EDDY_EVENTS_MAX") {
            guard let count = Int(text), count > 0 else {
                preconditionFailure("EDDY_EVENTS_MAX must be a positive decimal integer, got \"\(text)\"")
            }
            return count
        }
        return defaultCount
    }

    private static func environment(_ name: String) -> String? {
        guard let pointer = getenv(name) else { return nil }
        let text = String(cString: pointer)
        return text.isEmpty ? nil : text
    }
}
