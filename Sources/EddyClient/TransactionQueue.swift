// The order in which one `Database`'s transactions run: one whose location is at, above or
// below the location of an earlier one (running or waiting) waits until that one completes.
// Firebase's clients send a client's transactions on a location one after another for the
// same reason: run side by side, each would make the others lose their compare-and-set and
// retry, and with enough of them some would give up after 25 retries. Transactions on
// locations apart from each other run at once.
//
// A write of the same client at, above or below a transaction's location (`abort(overlapping:)`)
// aborts it, as Firebase's `abortTransactionsAtPath` does for a set or an update (the `set`
// error) and `purgeOutstandingWrites` for all of them (`write_canceled`): one not written yet
// completes with the error; one whose write is on its way keeps its outcome unless it comes back
// stale.
//
// Invariants: transactions on overlapping locations start in the order they were made; each
// entry leaves when its transaction completes (`finished`), whatever the outcome.

import EddyModel
import Synchronization

final class TransactionQueue: Sendable {
    private struct Entry {
        let id: UInt64
        let location: Path
        let start: @Sendable () -> Void
        let abort: @Sendable (DatabaseError) -> Void
        var started = false
    }

    private struct State {
        var nextID: UInt64 = 1
        var entries: [Entry] = []
    }

    private let state = Mutex(State())

    /// Adds a transaction. Returns its id for `finished`, and whether it may start now: then
    /// the caller starts it (on its own thread); otherwise `start` runs once every earlier
    /// overlapping one completed.
    func enqueue(
        at location: Path, start: @escaping @Sendable () -> Void, abort: @escaping @Sendable (DatabaseError) -> Void
    ) -> (id: UInt64, startsNow: Bool) {
        self.state.withLock { state -> (UInt64, Bool) in
            let id = state.nextID
            state.nextID += 1
            state.entries.append(Entry(id: id, location: location, start: start, abort: abort))
            let blocked = state.entries.dropLast().contains { $0.location.overlaps(location) }
            if !blocked { state.entries[state.entries.count - 1].started = true }
            return (id, !blocked)
        }
    }

    /// The transaction `id` completed: the ones that waited only for it start.
    func finished(_ id: UInt64) {
        let ready = self.state.withLock { state -> [@Sendable () -> Void] in
            state.entries.removeAll { $0.id == id }
            return Self.takeReady(&state)
        }
        for start in ready { start() }
    }

    /// A write at `paths` is being made: every transaction at, above or below one of them is
    /// told to abort (each decides how, by how far it got).
    func abort(overlapping paths: [Path], with error: DatabaseError) {
        let aborts = self.state.withLock { state in
            state.entries.filter { entry in paths.contains { $0.overlaps(entry.location) } }.map(\.abort)
        }
        for abort in aborts { abort(error) }
    }

    /// Marks started, and returns, the entries no earlier entry overlaps.
    private static func takeReady(_ state: inout State) -> [@Sendable () -> Void] {
        var ready: [@Sendable () -> Void] = []
        for i in state.entries.indices where !state.entries[i].started {
            let location = state.entries[i].location
            let blocked = state.entries[..<i].contains { $0.location.overlaps(location) }
            guard !blocked else { continue }
            state.entries[i].started = true
            ready.append(state.entries[i].start)
        }
        return ready
    }
}
