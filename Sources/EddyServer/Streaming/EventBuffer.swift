// The bounded hand-off between a listener's sink (called on the engine's committer or syncer
// thread, which must never block) and the task writing one SSE response. Holds at most
// `batchesMax` batches or `bytesMax` approximate bytes, taken from the daemon's shared
// `MemoryBudget` while held; a consumer that falls further behind (or whose next batch
// the shared budget cannot take)
// is cut off: the buffer drops what it holds, remembers the last log id it handed out, and ends
// with `.overflow` so the stream can tell the client where to resume. Nothing is ever dropped
// silently.

import EddyEngine
import EddyModel
import Synchronization

final class EventBuffer: Sendable {
    enum Item: Sendable {
        case events([ChildEvent])
        case keepAlive
        /// The consumer fell too far behind (past `bound`); resume after `lastDelivered`.
        case overflow(lastDelivered: LogID?, bound: Bound)
    }

    /// The bound a consumer that was cut off passed.
    enum Bound: Sendable, Equatable {
        /// `batchesMax` batches waiting.
        case batches
        /// `bytesMax` bytes waiting.
        case bytes
        /// The bytes all streams together may have waiting (`MemoryBudget`).
        case shared
    }

    private struct State {
        /// Batches waiting, with the bytes each is counted for in `bytes` and the budget.
        var pending: [(events: [ChildEvent], bytes: Int)] = []
        var bytes = 0
        var keepAlive = false
        var finished = false
        var overflowed = false
        var overflowBound = Bound.batches
        var lastDelivered: LogID?
        /// A batch was taken (handed to the waiter or queued).
        var tookAny = false
        var waiter: CheckedContinuation<Item?, Never>?
    }

    private let state = Mutex(State())
    let batchesMax: Int
    let bytesMax: Int
    let budget: MemoryBudget

    init(batchesMax: Int = 1024, bytesMax: Int = 16 * 1024 * 1024, budget: MemoryBudget = MemoryBudget(bytesMax: .max)) {
        self.batchesMax = batchesMax
        self.bytesMax = bytesMax
        self.budget = budget
    }

    deinit {
        self.state.withLock { state in self.budget.release(state.bytes) }
    }

    /// The bytes a batch is counted for. The attach batch (no log ids: the value at attach) is
    /// not measured: `Value.approximateBytes` walks every node, and streams attaching together
    /// share one value with the engine's attach read, so 100 streams on a 100,000-child location
    /// spent 20 s walking it, half of that on the committer. The stream counts its encoded
    /// first `put` instead while the socket takes it (`RESTResponder.send`).
    static func countedBytes(_ events: [ChildEvent]) -> Int {
        if events.allSatisfy({ $0.logID == nil }) { return 0 }
        return events.reduce(0) { $0 + $1.approximateBytes }
    }

    /// The listener's sink.
    func push(_ events: [ChildEvent]) {
        let bytes = Self.countedBytes(events)
        let waiter = self.state.withLock { state -> (CheckedContinuation<Item?, Never>, Item)? in
            guard !state.finished, !state.overflowed else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                state.tookAny = true
                return (waiter, .events(events))
            }
            // One batch is taken when nothing waits (a location's first value may be larger
            // than any bound) unless the shared budget is full; past that, every bound holds.
            var passed: Bound? = nil
            if state.pending.isEmpty {
                if bytes == 0 ? self.budget.isFull : !self.budget.reserveUnlessFull(bytes) { passed = .shared }
            } else if state.pending.count >= self.batchesMax {
                passed = .batches
            } else if state.bytes + bytes > self.bytesMax {
                passed = .bytes
            } else if !self.budget.reserve(bytes) {
                passed = .shared
            }
            if let passed {
                state.overflowed = true
                state.overflowBound = passed
                state.pending.removeAll()
                self.budget.release(state.bytes)
                state.bytes = 0
                self.budget.trimSoon()
                return nil
            }
            state.pending.append((events, bytes))
            state.bytes += bytes
            state.tookAny = true
            return nil
        }
        if let (waiter, item) = waiter {
            self.noteDelivered(item)
            waiter.resume(returning: item)
        }
    }

    /// The first batch (a stream's first value) was refused because the shared budget was full:
    /// the stream can be refused before it starts.
    var refusedItsFirstBatch: Bool {
        self.state.withLock { $0.overflowed && !$0.tookAny && $0.overflowBound == .shared }
    }

    /// Asks for a keep-alive comment at the next opportunity (from a timer).
    func pushKeepAlive() {
        let waiter = self.state.withLock { state -> CheckedContinuation<Item?, Never>? in
            guard !state.finished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.keepAlive = true
            return nil
        }
        waiter?.resume(returning: .keepAlive)
    }

    /// Ends the stream (client gone or server stopping): `next()` answers nil from now on.
    func finish() {
        let waiter = self.state.withLock { state -> CheckedContinuation<Item?, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The next item, waiting for one; nil once finished.
    func next() async -> Item? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Item?, Never>) in
            let ready = self.state.withLock { state -> Item?? in
                if state.overflowed {
                    // Said once; the stream is over after it.
                    state.overflowed = false
                    state.finished = true
                    return .some(.overflow(lastDelivered: state.lastDelivered, bound: state.overflowBound))
                }
                if !state.pending.isEmpty {
                    let (events, bytes) = state.pending.removeFirst()
                    state.bytes -= bytes
                    self.budget.release(bytes)
                    if let id = events.last?.logID { state.lastDelivered = id }
                    return .some(.events(events))
                }
                if state.keepAlive {
                    state.keepAlive = false
                    return .some(.keepAlive)
                }
                if state.finished { return .some(nil) }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    private func noteDelivered(_ item: Item) {
        guard case .events(let events) = item, let id = events.last?.logID else { return }
        self.state.withLock { $0.lastDelivered = id }
    }
}
