// A namespace being opened or closed outside the data directory's lock. The one thread that
// opens (or closes) it finishes the transition; anyone else who needs that namespace meanwhile
// waits on it and then looks again. Other namespaces do not wait: an open replays the
// namespace's write-ahead log and a close flushes its memtables, which can take seconds.
//
// Invariant: `finish` is called exactly once, after the engine is in the directory's open map
// (opened) or closed (closing); waiters never miss it (the flag is read under the condition).

import Foundation

final class NamespaceTransition: @unchecked Sendable {
    enum Kind { case opening, closing }

    let kind: Kind
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var finished = false

    init(_ kind: Kind) {
        self.kind = kind
    }

    /// Blocks until `finish`.
    func wait() {
        self.condition.lock()
        while !self.finished { self.condition.wait() }
        self.condition.unlock()
    }

    /// Wakes every waiter (once; later calls do nothing).
    func finish() {
        self.condition.lock()
        self.finished = true
        self.condition.broadcast()
        self.condition.unlock()
    }
}
