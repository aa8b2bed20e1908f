// Idle RocksDB iterators kept for reuse by reads of the newest state. Creating an iterator
// (a super-version reference, one table iterator per file, an arena) and destroying it cost
// about as much as a warm seek, which is most of a small query; an iterator created since the
// last change reads exactly what a new one would, so it can serve the next read instead.
//
// A view (`DatabaseView`) names a state: RocksDB's latest sequence number plus the database's
// count of changes that take no sequence number (ingested files). Invariants:
// - an idle iterator is handed out only while its view is still the database's newest, so a
//   pooled read sees what a fresh iterator would;
// - at most `capacity` iterators are idle; an iterator returned while stale, or to a full or
//   closed pool, is destroyed at once;
// - an idle iterator is destroyed within about 2 x `idleSecondsMax` of its return (a one-shot
//   purge, rescheduled while any is idle), so it pins an old memtable or compacted-away
//   files for at most that long;
// - after `close()` nothing is pooled and every idle iterator has been destroyed (the
//   database closes its handles after it).

import CRocksDB
import Dispatch
import Synchronization

/// A state of a `Database`: equal views read the same data.
public struct DatabaseView: Equatable, Sendable {
    let sequence: UInt64
    let unsequencedChanges: UInt64
}

final class IteratorPool: Sendable {
    /// Idle iterators at most: enough for the reader threads of a busy database.
    static let capacity = 16
    /// How long an idle iterator is kept.
    static let idleSecondsMax = 1.0

    private struct Idle: @unchecked Sendable {
        // @unchecked: a RocksDB iterator is owned by one thread at a time; the pool hands it
        // from the returning thread to the next taker under its mutex.
        let iterator: OpaquePointer
        let family: OpaquePointer
        let view: DatabaseView
        let returnedAt: DispatchTime
    }

    private struct State {
        var idle: [Idle] = []
        var closed = false
        var purgeScheduled = false
    }

    private let state = Mutex(State())

    /// Takes an idle iterator over `family` created at `view`, if one is idle. Drops the idle
    /// iterators of other views on the way (they can never be handed out again).
    func take(family: OpaquePointer, view: DatabaseView) -> OpaquePointer? {
        let (found, stale) = self.state.withLock { state -> (Idle?, [Idle]) in
            var found: Idle?
            var stale: [Idle] = []
            state.idle.removeAll { idle in
                if idle.view != view {
                    stale.append(idle)
                    return true
                }
                if found == nil, idle.family == family {
                    found = idle
                    return true
                }
                return false
            }
            return (found, stale)
        }
        stale.forEach { rocksdb_iter_destroy($0.iterator) }
        return found?.iterator
    }

    /// Keeps `iterator` (over `family`, created at `view`) for a later `take`, or destroys it
    /// when the pool is closed or full, or `view` is no longer `current()` (asked only while
    /// the pool is open: it reads the database).
    func give(_ iterator: OpaquePointer, family: OpaquePointer, view: DatabaseView, current: () -> DatabaseView) {
        let (kept, schedulePurge) = self.state.withLock { state -> (Bool, Bool) in
            guard !state.closed, state.idle.count < Self.capacity, view == current() else { return (false, false) }
            state.idle.append(Idle(iterator: iterator, family: family, view: view, returnedAt: .now()))
            let schedule = !state.purgeScheduled
            state.purgeScheduled = true
            return (true, schedule)
        }
        if !kept { rocksdb_iter_destroy(iterator) }
        if schedulePurge { self.schedulePurge() }
    }

    /// Destroys every idle iterator and pools nothing from now on.
    func close() {
        let idle = self.state.withLock { state -> [Idle] in
            state.closed = true
            defer { state.idle.removeAll() }
            return state.idle
        }
        idle.forEach { rocksdb_iter_destroy($0.iterator) }
    }

    /// Idle iterators now (for tests).
    var idleCount: Int { self.state.withLock { $0.idle.count } }

    private func schedulePurge() {
        DispatchQueue.global().asyncAfter(deadline: .now() + Self.idleSecondsMax) { self.purge() }
    }

    /// Destroys the iterators idle for `idleSecondsMax` or longer; schedules itself again while
    /// any stays idle. Runs under the mutex so that `close` cannot free the database's handles
    /// while an iterator is being destroyed.
    private func purge() {
        let again = self.state.withLock { state -> Bool in
            let cutoff = DispatchTime.now().uptimeNanoseconds &- UInt64(Self.idleSecondsMax * 1e9)
            state.idle.removeAll { idle in
                guard idle.returnedAt.uptimeNanoseconds <= cutoff else { return false }
                rocksdb_iter_destroy(idle.iterator)
                return true
            }
            state.purgeScheduled = !state.closed && !state.idle.isEmpty
            return state.purgeScheduled
        }
        if again { self.schedulePurge() }
    }
}
