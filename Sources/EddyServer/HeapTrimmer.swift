// Hands free heap pages back to the kernel after a peak, so the daemon's RSS falls back near
// its baseline once stalled subscribers or a crowd of connections are gone. glibc keeps freed
// memory in its arenas (one per thread that allocated) and returns it only on `malloc_trim`.
//
// Triggers: a stream cut off for being behind (`MemoryBudget`), and the number of open
// connections falling to half of its high-water mark (`noteOpenConnections`). A trim runs
// 500 ms after it is asked for, off the caller's thread; requests while one is scheduled are
// served by it (it runs after them), so every request is followed by a trim and a burst of
// requests costs one. Process-wide, as the heap is.

import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc

    /// glibc's `int malloc_trim(size_t pad)` (<malloc.h>, which the Glibc module does not
    /// export): releases free heap memory of every arena back to the kernel.
    @_silgen_name("malloc_trim")
    private func glibcMallocTrim(_ pad: Int) -> Int32
#endif

final class HeapTrimmer: Sendable {
    static let shared = HeapTrimmer()

    /// Fewer connections than this at the high-water mark are not worth a trim.
    static let connectionsWorthTrimming = 64

    private let scheduled = Atomic<Bool>(false)
    /// The most connections open since the last trim they caused.
    private let connectionsHighWater = Mutex(0)

    func trimSoon() {
        #if canImport(Glibc)
            guard self.scheduled.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
            DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .milliseconds(500)) {
                self.scheduled.store(false, ordering: .relaxed)
                _ = glibcMallocTrim(0)
            }
        #endif
    }

    /// Called with the count of open connections of one listener after each close.
    func noteOpenConnections(_ open: Int) {
        let trim = self.connectionsHighWater.withLock { highWater -> Bool in
            highWater = max(highWater, open)
            guard highWater >= Self.connectionsWorthTrimming, open <= highWater / 2 else { return false }
            highWater = open
            return true
        }
        if trim { self.trimSoon() }
    }

    /// Called with the count of open connections after each open (keeps the high-water mark).
    func noteOpened(_ open: Int) {
        self.connectionsHighWater.withLock { $0 = max($0, open) }
    }
}
