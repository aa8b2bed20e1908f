// The hand-off from the committer to the syncer thread under `sync` durability.
//
// The committer writes a group to RocksDB without fsync and, when more writes are already
// waiting, hands the group here and goes on applying the next one while the syncer fsyncs the
// WAL (one fsync covers every group written before it) and then acknowledges. When nothing is
// waiting and the syncer is idle, the committer fsyncs itself, so a lone writer pays no extra
// thread hop.
//
// Thread-safety: every field is guarded by `condition`'s lock.
// Invariants: tickets are acknowledged in the order they were enqueued; `tickets.count <=
// capacity` (the committer waits when it is full); `busy` is true while the syncer holds
// tickets it took but has not acknowledged.

import EddyEvents
import EddyModel
import Foundation

struct SyncTicket: Sendable {
    var writes: [PendingWrite]
    var outcomes: [Result<WriteOutcome, EddyError>]
    var entries: [LogEntry]
    /// Live events of these entries (and attach batches), delivered before the acknowledgements.
    var deliveries: [Delivery] = []
}

final class SyncQueue: @unchecked Sendable {
    // @unchecked: all mutable state below is only touched with `condition` locked.
    private let condition = NSCondition()
    private var tickets: [SyncTicket] = []
    private var busy = false
    private var stopping = false
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// True when no ticket is queued or being synced.
    var isIdle: Bool {
        self.condition.lock()
        defer { self.condition.unlock() }
        return self.tickets.isEmpty && !self.busy
    }

    /// Queues a ticket, waiting while the queue is full.
    func enqueue(_ ticket: SyncTicket) {
        self.condition.lock()
        defer { self.condition.unlock() }
        while self.tickets.count >= self.capacity { self.condition.wait() }
        self.tickets.append(ticket)
        self.condition.broadcast()
    }

    /// Waits for tickets and takes all of them; nil when stopping and drained.
    func take() -> [SyncTicket]? {
        self.condition.lock()
        defer { self.condition.unlock() }
        while self.tickets.isEmpty {
            if self.stopping { return nil }
            self.condition.wait()
        }
        var taken: [SyncTicket] = []
        swap(&taken, &self.tickets)
        self.busy = true
        self.condition.broadcast()
        return taken
    }

    /// The syncer acknowledged what it took.
    func finished() {
        self.condition.lock()
        self.busy = false
        self.condition.broadcast()
        self.condition.unlock()
    }

    func stop() {
        self.condition.lock()
        self.stopping = true
        self.condition.broadcast()
        self.condition.unlock()
    }
}
