// The bounded queue between writers (any thread or task) and the single committer thread.
//
// Thread-safety: every field is guarded by `condition`'s lock.
// Invariants: `pending.count <= 2 × capacity`; once `stopping`, nothing new is accepted, but
// everything already queued is still committed (drain on shutdown).
// Two bounds: writers that can hold their client back wait while `capacity` writes are queued
// (`isFull`, `Engine.waitForCommitRoom`), so a full queue is backpressure; a write is refused
// `busy` only past twice that, which only writers that do not wait can reach (the slack absorbs
// the waiters that wake together and all find room).

import EddyEvents
import EddyModel
import Foundation

struct PendingWrite: Sendable {
    var operation: WriteOperation
    var ifMatch: String?
    /// Whom the write acts for: the committer checks the rules unless it is the admin.
    var access: Access = .admin
    /// The rules version `Engine.precheck` allowed this write under (nil: not checked yet).
    var checkedUnderRules: UInt64? = nil
    /// Rough bytes of the write (`WriteValidator`), computed by the caller, off the committer.
    var approximateBytes: Int
    /// Listeners that must not hear this write ("write without notifying").
    var silenced: Set<ListenerID> = []
    /// On a follower: the leader's entry to apply as it is (same id, timestamp, changes); then
    /// `operation` only describes it (an update of its changes at its location).
    var replicated: LogEntry? = nil
    /// The leader's stored encoding of `replicated` (stored as it is, not encoded again).
    var replicatedBytes: [UInt8]? = nil
    /// Called once, when the write is durable (or failed), after its entry's event deliveries.
    var completion: @Sendable (Result<WriteOutcome, EddyError>) -> Void
}

/// Work the committer does between groups, so it is ordered with writes: rules (and the index
/// catalog) changes, and attaching or removing live-event listeners.
enum ControlRequest: Sendable {
    case setRules(Rules, CheckedContinuation<Result<Rules, EddyError>, Never>)
    case listen(ListenerSpec, CheckedContinuation<Result<ListenerAttachment, EddyError>, Never>)
    case unlisten(ListenerID, CheckedContinuation<Bool, Never>)
    case unlistenAll(Path, CheckedContinuation<Bool, Never>)
    /// A replica's entries after the given id undone and deleted (`Engine.discardEntries`).
    case discardEntries(
        after: LogID, countMax: Int, keep: @Sendable ([LogEntry]) throws(EddyError) -> Void,
        CheckedContinuation<Result<[LogEntry], EddyError>, Never>)

    /// Answers a request the committer will never run (the engine stopped).
    func refuse(_ error: EddyError) {
        switch self {
        case .setRules(_, let continuation): continuation.resume(returning: .failure(error))
        case .listen(_, let continuation): continuation.resume(returning: .failure(error))
        case .unlisten(_, let continuation), .unlistenAll(_, let continuation): continuation.resume(returning: false)
        case .discardEntries(_, _, _, let continuation): continuation.resume(returning: .failure(error))
        }
    }
}

final class CommitQueue: @unchecked Sendable {
    // @unchecked: all mutable state below is only touched with `condition` locked.
    private let condition = NSCondition()
    private var pending: [PendingWrite] = []
    private var controls: [ControlRequest] = []
    /// Control requests are rare (an operator changing rules); this bounds them anyway.
    /// Control requests waiting at most; a burst of reconnecting subscribers (one attach each)
    /// must fit.
    private let controlsCapacity = 4096
    private var stopping = false
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// True when `capacity` writes are queued: a writer that can wait should (a hint).
    var isFull: Bool {
        self.condition.lock()
        defer { self.condition.unlock() }
        return self.pending.count >= self.capacity
    }

    /// True when no write is waiting (a hint: writers may arrive right after).
    var isEmpty: Bool {
        self.condition.lock()
        defer { self.condition.unlock() }
        return self.pending.isEmpty
    }

    /// Queues a write. Refuses (without queuing) when full or stopping.
    func enqueue(_ write: PendingWrite) -> EddyError? {
        self.condition.lock()
        defer { self.condition.unlock() }
        if self.stopping { return EddyError(.shuttingDown, "the database is shutting down; the write was not applied") }
        if self.pending.count >= 2 * self.capacity {
            return EddyError(
                .busy,
                "commit queue is full (\(2 * self.capacity) writes: twice commitQueueCountMax, \(self.capacity)); the write was not applied, retry")
        }
        self.pending.append(write)
        self.condition.signal()
        return nil
    }

    /// Queues a control request. Refuses when stopping or full.
    func enqueueControl(_ request: ControlRequest) -> EddyError? {
        self.condition.lock()
        defer { self.condition.unlock() }
        if self.stopping { return EddyError(.shuttingDown, "the database is shutting down; nothing was changed") }
        if self.controls.count >= self.controlsCapacity {
            return EddyError(.busy, "too many listens and rules changes waiting for the committer (\(self.controlsCapacity)); nothing was changed, retry")
        }
        self.controls.append(request)
        self.condition.signal()
        return nil
    }

    /// Takes every waiting control request.
    func takeControls() -> [ControlRequest] {
        self.condition.lock()
        defer { self.condition.unlock() }
        var taken: [ControlRequest] = []
        swap(&taken, &self.controls)
        return taken
    }

    /// Waits for writes and takes up to `max` of them, stopping early once they hold
    /// `bytesMax` (at least one is always taken). With `deadline`, returns an empty group when
    /// it passes first; also returns an empty group when a control request is waiting.
    /// Returns nil when stopping and drained.
    func takeGroup(max: Int, bytesMax: Int, deadline: Date?) -> [PendingWrite]? {
        self.condition.lock()
        defer { self.condition.unlock() }
        while self.pending.isEmpty {
            if !self.controls.isEmpty { return [] }
            if self.stopping { return nil }
            if let deadline {
                if !self.condition.wait(until: deadline) { return [] }
            } else {
                self.condition.wait()
            }
        }
        var count = 0
        var bytes = 0
        while count < min(max, self.pending.count), count == 0 || bytes + self.pending[count].approximateBytes <= bytesMax {
            bytes += self.pending[count].approximateBytes
            count += 1
        }
        if count == self.pending.count {
            var group: [PendingWrite] = []
            swap(&group, &self.pending)
            return group
        }
        let group = Array(self.pending.prefix(count))
        self.pending.removeFirst(count)
        return group
    }

    func stop() {
        self.condition.lock()
        self.stopping = true
        self.condition.broadcast()
        self.condition.unlock()
    }
}
