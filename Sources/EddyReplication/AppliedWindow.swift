// The follower's bound on replicated entries handed to its engine but not yet applied and
// durable. Counted in entries, not frames: at a low write rate every frame holds one entry, and
// a bound of a few frames let one slow fsync on the replica stall the stream (and the events
// of entries already received) for as long as the fsync took. Invariant: at most
// `entriesMax` entries are in flight, except that one frame is always admitted when nothing
// is in flight (a frame never holds more than the leader's frame maximum, 1,024 entries).

import Foundation

final class AppliedWindow: @unchecked Sendable {
    // @unchecked: every field is read and written under `condition`.
    private let condition = NSCondition()
    private var inFlight = 0
    let entriesMax: Int

    init(entriesMax: Int) {
        self.entriesMax = entriesMax
    }

    /// Waits until `count` more entries fit, then counts them in flight.
    func admit(_ count: Int) {
        self.condition.lock()
        defer { self.condition.unlock() }
        while self.inFlight > 0, self.inFlight + count > self.entriesMax { self.condition.wait() }
        self.inFlight += count
    }

    /// `count` entries were applied (or failed): they leave the window.
    func release(_ count: Int) {
        self.condition.lock()
        defer { self.condition.unlock() }
        self.inFlight -= count
        self.condition.broadcast()
    }

    /// Waits until nothing is in flight.
    func drain() {
        self.condition.lock()
        defer { self.condition.unlock() }
        while self.inFlight > 0 { self.condition.wait() }
    }
}
