// The bytes of events waiting for slow readers, across every SSE stream and native
// subscriber of the daemon (`--stream-buffers-bytes-total`). Each stream also has its own bound
// (`--stream-buffer-bytes`); a stream that would take the total past its bound is cut off like
// one that exceeds its own, with the log id to resume after, so a crowd of stalled clients
// cannot exhaust memory. After a cut-off, freed heap pages are handed back to the kernel
// (`malloc_trim`, at most once a second), so the RSS falls back once the client is gone.
// Thread-safety: an atomic counter; reservations never exceed `bytesMax`.

import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc

    /// glibc's `int malloc_trim(size_t pad)` (<malloc.h>, which the Glibc module does not
    /// export): releases free heap memory of every arena back to the kernel.
    @_silgen_name("malloc_trim")
    private func glibcMallocTrim(_ pad: Int) -> Int32
#endif

final class StreamMemoryBudget: Sendable {
    let bytesMax: Int
    private let used = Atomic<Int>(0)
    private let lastTrimSeconds = Atomic<Int>(0)

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

    /// A client was cut off and its buffers freed: return free heap pages to the kernel, off
    /// the caller's thread, at most once a second.
    func trimSoon() {
        #if canImport(Glibc)
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let seconds = Int(now.tv_sec)
            let last = self.lastTrimSeconds.load(ordering: .relaxed)
            guard seconds > last, self.lastTrimSeconds.compareExchange(expected: last, desired: seconds, ordering: .relaxed).exchanged
            else { return }
            DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .milliseconds(200)) { _ = glibcMallocTrim(0) }
        #endif
    }
}
