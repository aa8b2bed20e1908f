// A daemon-wide bound on bytes of one kind held for many clients at once. Two are used:
// - events waiting for slow readers, across every SSE stream and native subscriber
//   (`--stream-buffers-bytes-total`). Each stream also has its own bound
//   (`--stream-buffer-bytes`); a stream that would take the total past its bound is cut off
//   like one that exceeds its own, with the log id to resume after, so a crowd of stalled
//   clients cannot exhaust memory. After a cut-off, freed heap pages are handed back to the
//   kernel (`HeapTrimmer`), so the RSS falls back once the client is gone.
// - request bodies being received and applied (`--request-bodies-bytes-total`): a body the
//   budget cannot take is refused with 503, nothing applied.
// A client's first value (a location's whole value) may be larger than any bound, so one is
// let past `bytesMax` while the budget is not full yet (`reserveUnlessFull`); once it is full,
// those are refused too, and a client that leaves counted bytes unread meanwhile is
// disconnected (`StalledReaderWatch`). Bytes already in memory are counted whatever the total
// (`reserve(evenPast:)`).
// Thread-safety: an atomic counter; `reserve` never takes the total past `bytesMax`.

import Synchronization

final class MemoryBudget: Sendable {
    let bytesMax: Int
    private let used = Atomic<Int>(0)

    init(bytesMax: Int) {
        precondition(bytesMax > 0)
        self.bytesMax = bytesMax
    }

    var usedBytes: Int { self.used.load(ordering: .relaxed) }

    /// Takes `bytes` from the budget; false (nothing taken) when it would go past `bytesMax`,
    /// unless `evenPast` (a client's only frame or batch, which must get through whatever its
    /// size; it still counts against everyone else).
    func reserve(_ bytes: Int, evenPast: Bool = false) -> Bool {
        if evenPast {
            self.used.add(bytes, ordering: .relaxed)
            return true
        }
        var current = self.used.load(ordering: .relaxed)
        while true {
            guard current + bytes <= self.bytesMax else { return false }
            let (exchanged, original) = self.used.compareExchange(
                expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Takes `bytes` even past `bytesMax` while the budget is not full yet (a client's first
    /// value or only frame, which must get through whatever its size); false (nothing taken)
    /// once reservations have reached `bytesMax`, so the total stays within `bytesMax` plus one
    /// such reservation.
    func reserveUnlessFull(_ bytes: Int) -> Bool {
        var current = self.used.load(ordering: .relaxed)
        while true {
            guard current < self.bytesMax else { return false }
            let (exchanged, original) = self.used.compareExchange(
                expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Reservations have reached `bytesMax`.
    var isFull: Bool { self.usedBytes >= self.bytesMax }

    func release(_ bytes: Int) {
        let after = self.used.subtract(bytes, ordering: .relaxed).newValue
        precondition(after >= 0, "released more stream bytes than were reserved")
    }

    /// A client was cut off or its buffers were freed: return free heap pages to the kernel
    /// soon (`HeapTrimmer`).
    func trimSoon() {
        HeapTrimmer.shared.trimSoon()
    }
}
