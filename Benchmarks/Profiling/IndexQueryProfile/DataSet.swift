// The benchmark data set and query bounds, defined by formula so that this driver and
// `scripts/sqlite_query_bench.py` produce byte-identical data and the same bound sequence from
// the same seed without exchanging files. Any change here must be made there too; both print
// the same `data digest` line, and `index-bench.sh` compares the digests of the query results.
//
//   mix(x)       = splitmix64 finalizer of x (mod 2^64)
//   h(tag, i)    = mix((seed * 0x9E3779B97F4A7C15) ^ (tag << 56) ^ i)            (mod 2^64)
//   key(i)       = 8 push-ID digits of (1_700_000_000_000 + i), most significant first,
//                  then 10 digits from h(2, i) (6 bits each, low bits first),
//                  then 2 digits from h(4, i)                          (20 characters, like a push ID;
//                                                                      keys sort in i order)
//   child(i)     = {"score": h(1, i) % 1_000_000, "name": "item-<i>", "group": i % 100}
//   range j      = x = h(3, j) % (1_000_000 - span): startAt(x) endAt(x + span)
//   equal j      = score(h(5, j) % n): equalTo that score (at least one match)
//   key query j  = startAt(key(h(6, j) % n)) limitToFirst(100)

import EddyModel

struct DataSet: Sendable {
    static let scoreRange: UInt64 = 1_000_000
    static let timestampBase: UInt64 = 1_700_000_000_000

    let count: Int
    let seed: UInt64

    static func mix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    func hash(_ tag: UInt64, _ i: Int) -> UInt64 {
        Self.mix((self.seed &* 0x9E37_79B9_7F4A_7C15) ^ (tag << 56) ^ UInt64(i))
    }

    func key(_ i: Int) -> String {
        let alphabet = PushIDGenerator.alphabet
        var chars = [UInt8](repeating: 0, count: PushIDGenerator.length)
        var timestamp = Self.timestampBase + UInt64(i)
        for position in stride(from: 7, through: 0, by: -1) {
            chars[position] = alphabet[Int(timestamp % 64)]
            timestamp /= 64
        }
        let low = self.hash(2, i)
        for digit in 0..<10 { chars[8 + digit] = alphabet[Int((low >> (6 * UInt64(digit))) & 63)] }
        let high = self.hash(4, i)
        for digit in 0..<2 { chars[18 + digit] = alphabet[Int((high >> (6 * UInt64(digit))) & 63)] }
        return String(decoding: chars, as: UTF8.self)
    }

    func score(_ i: Int) -> Int { Int(self.hash(1, i) % Self.scoreRange) }

    func child(_ i: Int) -> Value {
        .object([
            "score": .number(Double(self.score(i))),
            "name": .string("item-\(i)"),
            "group": .number(Double(i % 100)),
        ])
    }

    /// The range query bounds of iteration `j`: [x, x + span].
    func range(_ j: Int, span: Int) -> (low: Int, high: Int) {
        let x = Int(self.hash(3, j) % (Self.scoreRange - UInt64(span)))
        return (x, x + span)
    }

    /// A score that exists (the score of a chosen child), for equalTo.
    func equalScore(_ j: Int) -> Int { self.score(Int(self.hash(5, j) % UInt64(self.count))) }

    /// A key that exists, for the orderByKey reference query.
    func startKey(_ j: Int) -> String { self.key(Int(self.hash(6, j) % UInt64(self.count))) }

    /// Printed by both drivers so a mismatch in the formula shows before any timing.
    var digest: String {
        var scoreSum = 0
        for i in 0..<self.count { scoreSum += self.score(i) }
        return "n=\(self.count) first=\(self.key(0)) last=\(self.key(self.count - 1)) scoreSum=\(scoreSum)"
    }
}
