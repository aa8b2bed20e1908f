// A listen's place in the engine's order of writes, taken before the listen is made: a server
// takes it as it reads a subscribe request off a connection, before handing the request to the
// connection's task, so that a write another connection sends right after is not applied first
// (the listen then hears it as an event rather than in its first value). Writes that reach the
// engine after the reservation wait for the listen, at most `CommitQueue.reservationHoldMax`.
// Invariant: the reservation is used once (`Engine.listen(..., order:)`) or given up (`cancel`,
// or when dropped), so it never holds writes back longer than that bound.

public final class ListenOrder: Sendable {
    /// Nil when the engine could not reserve (too many reserved): the listen takes its place
    /// when it is made.
    let ticket: UInt64?
    private let queue: CommitQueue

    init(queue: CommitQueue) {
        self.queue = queue
        self.ticket = queue.reserveArrival()
    }

    deinit {
        self.cancel()
    }

    /// Gives the place up (writes no longer wait for it); idempotent, and nothing once the
    /// listen was made with it.
    public func cancel() {
        if let ticket = self.ticket { self.queue.cancelReservation(ticket) }
    }
}

extension Engine {
    /// Takes a place for a listen to be made with `listen(..., order:)` (see `ListenOrder`).
    public func reserveListenOrder() -> ListenOrder {
        ListenOrder(queue: self.queue)
    }
}
