// A daemon-wide bound on bytes of one kind held for many clients at once. Two are used:
// - events waiting for slow readers, across every SSE stream and native subscriber
//   (`--stream-buffers-bytes-total`). Each stream also has its own bound
//   (`--stream-buffer-bytes`); a stream that would take the total past its bound is cut off
//   like one that exceeds its own, with the log id to resume after, so a crowd of stalled
//   clients cannot exhaust memory. After a cut-off, freed heap pages are handed back to the
//   kernel (`HeapTrimmer`), so the RSS falls back once the client is gone.
// - request bodies being received and applied (`--request-bodies-bytes-total`): a body the
//   budget cannot take is refused with 503, nothing applied.
// Thread-safety: an atomic counter; reservations never exceed `bytesMax`.

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
