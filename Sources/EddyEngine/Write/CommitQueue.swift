// The bounded queue between writers (any thread or task) and the single committer thread.
//
// Thread-safety: every field is guarded by `condition`'s lock.
// Invariants: `pending.count <= 2 × capacity`; once `stopping`, nothing new is accepted, but
// everything already queued is still committed (drain on shutdown).
// Two bounds: writers that can hold their client back wait while `capacity` writes are queued
// (`isFull`, `Engine.waitForCommitRoom`), so a full queue is backpressure; a write is refused
// `busy` only past twice that, which only writers that do not wait can reach (the slack absorbs
// the waiters that wake together and all find room).
//
// Arrival order: writes and control requests take a ticket from one counter as they arrive, and
// a group holds only writes that arrived before every waiting control request, so a listen that
// reached the engine before a write attaches before it (and hears it as an event). A listen can
// take its ticket before it is ready to be queued (`reserveArrival`, e.g. when its frame is read
// off the socket, before the hop to its connection's task); writes that arrive after the
// reservation then wait for it, at most `reservationHoldMax`, after which they go on (the listen
// then attaches after them, as without a reservation).

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
    /// Its ticket in the queue's arrival order (set by `enqueue`).
    var arrival: UInt64 = 0
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
    private var controls: [(arrival: UInt64, request: ControlRequest)] = []
    /// The last ticket handed out (writes, controls and reservations share it).
    private var arrivals: UInt64 = 0
    /// Reserved tickets of control requests not queued yet, with when each expires. At most
    /// `controlsCapacity`.
    private var reservations: [UInt64: ContinuousClock.Instant] = [:]
    /// How long writes that arrived after a reservation wait for its control request.
    static let reservationHoldMax: Duration = .milliseconds(50)
    /// Control requests are rare (an operator changing rules); this bounds them anyway.
    /// Control requests waiting at most; a burst of reconnecting subscribers (one attach each)
    /// must fit.
    private let controlsCapacity = 4096
    private var stopping = false
    private let capacity: Int
    /// Told how many reservations just expired (each held the writes after it the whole
    /// `reservationHoldMax`): `eddy_listen_order_expired_total`.
    private let reservationsExpired: @Sendable (Int) -> Void

    init(capacity: Int, reservationsExpired: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.capacity = capacity
        self.reservationsExpired = reservationsExpired
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
        self.arrivals += 1
        var write = write
        write.arrival = self.arrivals
        self.pending.append(write)
        self.condition.signal()
        return nil
    }

    /// A ticket for a control request to be queued later with `enqueueControl(_:reservation:)`;
    /// nil when too many are reserved (the request then takes its place when queued).
    func reserveArrival() -> UInt64? {
        self.condition.lock()
        defer { self.condition.unlock() }
        guard !self.stopping, self.reservations.count < self.controlsCapacity else { return nil }
        self.arrivals += 1
        self.reservations[self.arrivals] = .now.advanced(by: Self.reservationHoldMax)
        return self.arrivals
    }

    /// Gives up a reservation whose control request will not be queued; idempotent.
    func cancelReservation(_ ticket: UInt64) {
        self.condition.lock()
        defer { self.condition.unlock() }
        if self.reservations.removeValue(forKey: ticket) != nil { self.condition.signal() }
    }

    /// Queues a control request, in the place `reservation` took (from `reserveArrival`) while it
    /// has not expired, else as it arrives now. Refuses when stopping or full (the reservation is
    /// given up either way).
    func enqueueControl(_ request: ControlRequest, reservation: UInt64? = nil) -> EddyError? {
        self.condition.lock()
        defer { self.condition.unlock() }
        let reserved = reservation.flatMap { self.reservations.removeValue(forKey: $0) != nil ? $0 : nil }
        if reserved != nil { self.condition.signal() }
        if self.stopping { return EddyError(.shuttingDown, "the database is shutting down; nothing was changed") }
        if self.controls.count >= self.controlsCapacity {
            return EddyError(.busy, "too many listens and rules changes waiting for the committer (\(self.controlsCapacity)); nothing was changed, retry")
        }
        let arrival: UInt64
        if let reserved {
            arrival = reserved
        } else {
            self.arrivals += 1
            arrival = self.arrivals
        }
        self.controls.append((arrival, request))
        self.condition.signal()
        return nil
    }

    /// Takes every waiting control request.
    func takeControls() -> [ControlRequest] {
        self.condition.lock()
        defer { self.condition.unlock() }
        var taken: [(arrival: UInt64, request: ControlRequest)] = []
        swap(&taken, &self.controls)
        return taken.sorted { $0.arrival < $1.arrival }.map(\.request)
    }

    /// The ticket before which writes may be grouped now: the oldest waiting control request's
    /// or unexpired reservation's (expired ones are dropped); nil when none bounds them. With
    /// `stopping`, reservations no longer hold writes back.
    private func arrivalBarrier(now: ContinuousClock.Instant) -> (ticket: UInt64, holdUntil: ContinuousClock.Instant?)? {
        var barrier = self.controls.lazy.map(\.arrival).min()
        var holdUntil: ContinuousClock.Instant? = nil
        if !self.reservations.isEmpty {
            if self.stopping {
                self.reservations.removeAll()
            } else {
                let before = self.reservations.count
                self.reservations = self.reservations.filter { $0.value > now }
                if self.reservations.count < before { self.reservationsExpired(before - self.reservations.count) }
                if let (ticket, expiry) = self.reservations.min(by: { $0.key < $1.key }), barrier.map({ ticket < $0 }) ?? true {
                    barrier = ticket
                    holdUntil = expiry
                }
            }
        }
        return barrier.map { ($0, holdUntil) }
    }

    /// Waits for writes and takes up to `max` of them, stopping early once they hold
    /// `bytesMax` (at least one is always taken). With `deadline`, returns an empty group when
    /// it passes first; also returns an empty group when a control request is waiting.
    /// Returns nil when stopping and drained.
    func takeGroup(max: Int, bytesMax: Int, deadline: Date?) -> [PendingWrite]? {
        self.condition.lock()
        defer { self.condition.unlock() }
        var eligible = 0
        while true {
            let barrier = self.arrivalBarrier(now: .now)
            eligible = barrier.map { b in self.pending.prefix { $0.arrival < b.ticket }.count } ?? self.pending.count
            if eligible > 0 { break }
            if !self.controls.isEmpty { return [] }
            if self.pending.isEmpty, self.stopping { return nil }
            // Nothing to take: no write, or only writes held back by a reservation (until it
            // is queued, given up or expires).
            var wakeAt = deadline
            if let hold = barrier?.holdUntil, !self.pending.isEmpty {
                let expiry = Date().addingTimeInterval(ContinuousClock.now.duration(to: hold).seconds)
                wakeAt = wakeAt.map { min($0, expiry) } ?? expiry
            }
            if let wakeAt {
                if !self.condition.wait(until: wakeAt), let deadline, Date() >= deadline { return [] }
            } else {
                self.condition.wait()
            }
        }
        var count = 0
        var bytes = 0
        while count < min(max, eligible), count == 0 || bytes + self.pending[count].approximateBytes <= bytesMax {
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
