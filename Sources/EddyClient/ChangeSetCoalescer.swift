// Hands Realm-style change sets to a bounded buffer (the actor form of `observe` and
// `changes()`) without ever dropping what a consumer needs: when the buffer is full, the change
// sets that do not fit are not lost but merged, and the next one that fits is a single
// `.update` from the results the consumer last received to the newest, as Realm coalesces
// notifications it cannot deliver at once. That catch-up is offered again while the consumer
// reads (every `retryMilliseconds` at first, backing off to `retryMillisecondsMax`), so a
// consumer that falls behind during a burst gets the newest results when the burst is over,
// not only at the next change. Invariant: the consumer's results plus the indices handed to it
// always equal the newest results handed to it.
// Offers come on the database's callback queue (serially); retries on a timer: the lock keeps
// the two apart.

import Dispatch
import EddyModel
import Synchronization

final class ChangeSetCoalescer: Sendable {
    /// Puts a change set into the consumer's buffer; false when it is full (nothing taken).
    typealias Buffer = @Sendable (DatabaseCollectionChange) -> Bool
    /// Runs a retry after the given milliseconds.
    typealias Scheduler = @Sendable (_ milliseconds: Int, _ retry: @escaping @Sendable () -> Void) -> Void

    static let retryMilliseconds = 10
    static let retryMillisecondsMax = 250

    private struct State {
        /// The results of the last change set that went into the buffer (nil before the first).
        var handed: DatabaseResults?
        /// While change sets were left out: the newest results and the change set that takes
        /// the consumer there, waiting for room.
        var waiting: (newest: DatabaseResults, catchUp: DatabaseCollectionChange)?
        var retryScheduled = false
        var retryDelayMilliseconds = ChangeSetCoalescer.retryMilliseconds
    }

    private let keyPaths: ChangeSetKeyPathGroup
    private let buffer: Buffer
    private let schedule: Scheduler
    private let state = Mutex(State())

    init(keyPaths: ChangeSetKeyPathGroup, buffer: @escaping Buffer, schedule: @escaping Scheduler = ChangeSetCoalescer.afterDelay) {
        self.keyPaths = keyPaths
        self.buffer = buffer
        self.schedule = schedule
    }

    static let afterDelay: Scheduler = { milliseconds, retry in
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds), execute: retry)
    }

    /// Offers `change` to the buffer.
    func offer(_ change: DatabaseCollectionChange) {
        let retry = self.state.withLock { state -> Int? in
            let newest: DatabaseResults
            var outgoing = change
            var outgoingCatchesUp = false
            switch change {
            case .error:
                _ = self.buffer(change)
                return nil
            case .initial(let results):
                newest = results
            case .update(let results, _, _, _):
                newest = results
                if state.waiting != nil {
                    guard let catchUp = self.catchUp(from: state.handed, to: results) else {
                        // Only unobserved fields changed meanwhile: nothing to tell.
                        state.waiting = nil
                        return nil
                    }
                    outgoing = catchUp
                    outgoingCatchesUp = true
                }
            }
            if self.buffer(outgoing) {
                state.handed = newest
                state.waiting = nil
                return nil
            }
            // What the consumer lacks, from its last results to the newest, as one change set.
            guard let catchUp = outgoingCatchesUp ? outgoing : self.catchUp(from: state.handed, to: newest) else {
                state.waiting = nil
                return nil
            }
            state.waiting = (newest, catchUp)
            return self.retryIfNone(&state)
        }
        if let retry { self.scheduleRetry(after: retry) }
    }

    /// Offers the waiting catch-up again.
    private func retry() {
        let again = self.state.withLock { state -> Int? in
            state.retryScheduled = false
            guard let waiting = state.waiting else { return nil }
            if self.buffer(waiting.catchUp) {
                state.handed = waiting.newest
                state.waiting = nil
                state.retryDelayMilliseconds = Self.retryMilliseconds
                return nil
            }
            state.retryDelayMilliseconds = min(state.retryDelayMilliseconds * 2, Self.retryMillisecondsMax)
            return self.retryIfNone(&state)
        }
        if let again { self.scheduleRetry(after: again) }
    }

    /// The delay of a retry to schedule, nil when one is scheduled already.
    private func retryIfNone(_ state: inout State) -> Int? {
        guard !state.retryScheduled else { return nil }
        state.retryScheduled = true
        return state.retryDelayMilliseconds
    }

    private func scheduleRetry(after milliseconds: Int) {
        self.schedule(milliseconds) { self.retry() }
    }

    /// The change set from `handed` to `newest` (`.initial` when nothing was handed), nil when
    /// they differ in no observed field.
    private func catchUp(from handed: DatabaseResults?, to newest: DatabaseResults) -> DatabaseCollectionChange? {
        guard let handed else { return .initial(newest) }
        let diff = ChangeSetDiff(
            from: handed.children.map { (key: $0.key, value: $0.data) },
            to: newest.children.map { (key: $0.key, value: $0.data) }, keyPaths: self.keyPaths.effective)
        guard !diff.isEmpty else { return nil }
        return .update(newest, deletions: diff.deletions, insertions: diff.insertions, modifications: diff.modifications)
    }
}
