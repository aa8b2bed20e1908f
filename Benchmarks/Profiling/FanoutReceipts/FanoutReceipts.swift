// Receipt bookkeeping for the fan-out harnesses (EventProfile socket and redis, ReplicationProfile
// fanout): when each subscriber received write n, and when the writer's acknowledgement of write
// n arrived, in flat arrays indexed by n. Every fan-out write carries its number (`{"n": n}` in
// Eddy, field `n` in a Redis stream entry), so both servers are measured the same way.
//
// The harness shares the machine's two cores with the servers it measures, so its own cost per
// event is part of every figure. It used to key receipts by id: Eddy's 20-character log ids are
// heap Strings (hashed, then compared with memcmp along Dictionary's probe chains), where Redis's
// 15-character entry ids fit Swift's inline small strings. That made the Eddy side's harness
// the heavier one (the follower fan-out's harness used a whole core of the two, 0.66 after) and
// took CPU from the servers. Indexing by the write number costs a parse of a few digits and a
// store on either side.

import Glibc

public final class FanoutReceipts: @unchecked Sendable {
    // @unchecked: each instance is written by one thread and read after that thread finished.
    /// `FanoutReceipts.now()` at which write n was received; 0: not received.
    public private(set) var nanoseconds: [Int64]
    /// Writes received (each counted once).
    public private(set) var count = 0
    /// The server cut this subscriber off for lagging (`behind`).
    public var cutOff = false

    /// Nanoseconds on the monotonic clock (never 0): the time stamp of every receipt. Cheaper
    /// than ContinuousClock's Duration arithmetic at a million receipts a second.
    @inline(__always)
    public static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    public init(expected: Int) {
        self.nanoseconds = Array(repeating: 0, count: expected)
    }

    /// Records write `n` as received at `nanoseconds` (from `now()`); out-of-range and
    /// repeated numbers are ignored.
    @inline(__always)
    public func record(_ n: Int, at nanoseconds: Int64) {
        guard n >= 0, n < self.nanoseconds.count, self.nanoseconds[n] == 0 else { return }
        self.nanoseconds[n] = nanoseconds
        self.count += 1
    }

    /// Microseconds from each acknowledgement in `acks` to this subscriber's receipt of the same
    /// write, for every write both saw.
    public func latencies(from acks: FanoutReceipts, into result: inout [Double]) {
        for n in 0..<min(self.nanoseconds.count, acks.nanoseconds.count) {
            let received = self.nanoseconds[n]
            let acknowledged = acks.nanoseconds[n]
            if received != 0 && acknowledged != 0 { result.append(Double(received - acknowledged) / 1000) }
        }
    }
}

/// The fan-out subscribe request for /feed/latest. Subscribers ask for `coalesce` (several
/// entries per events frame when they were committed together), the counterpart of the Redis
/// subscribers' `XREAD COUNT 1000`; FANOUT_COALESCE=0 asks for one frame per entry.
public let fanoutSubscribePayload: [UInt8] = {
    let coalesce = getenv("FANOUT_COALESCE").map { String(cString: $0) } != "0"
    return Array(#"{"path":"/feed/latest","coalesce":\#(coalesce)}"#.utf8)
}()

/// Calls `body` with the number after every `"n":` in a JSON payload (the fan-out writes carry
/// `{"n": <write number>}`; a frame may hold the events of several writes).
@inline(__always)
public func forEachWriteNumber(in payload: [UInt8], _ body: (Int) -> Void) {
    payload.withUnsafeBufferPointer { bytes in
        guard let base = bytes.baseAddress else { return }
        let count = bytes.count
        var offset = 3
        // Jump from colon to colon with memchr (vectorised; a frame has a handful of them) and
        // look back for "n".
        while offset < count, let found = memchr(base + offset, 0x3A, count - offset) {
            let colon = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            offset = colon + 1
            guard bytes[colon - 3] == 0x22, bytes[colon - 2] == 0x6E, bytes[colon - 1] == 0x22 else { continue }
            var n = 0
            var digits = 0
            while offset < count, bytes[offset] >= 0x30, bytes[offset] <= 0x39 {
                n = n * 10 + Int(bytes[offset] - 0x30)
                offset += 1
                digits += 1
            }
            if digits > 0 { body(n) }
        }
    }
}
