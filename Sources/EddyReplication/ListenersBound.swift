// The daemon's start-up barrier for its sockets: each listener (native socket, log servers)
// reports when its bind finished, and whoever announces readiness (the HTTP server's
// `onServerRunning`: systemd READY=1 and the "listening on" line) waits until all have, so a
// client that sees the daemon ready can connect to every socket. A bind that failed reports
// too, and readiness is then never announced (the failing service stops the group).
// Thread-safety: a Mutex; waiters resume outside it.

import Synchronization

public final class ListenersBound: Sendable {
    private struct State {
        var remaining: Int
        var failed = false
        var waiters: [CheckedContinuation<Bool, Never>] = []
    }

    private let state: Mutex<State>

    /// `count`: the listeners that will report.
    public init(count: Int) {
        precondition(count >= 0)
        self.state = Mutex(State(remaining: count))
    }

    /// One listener's bind finished (`succeeded` false: it failed).
    public func report(succeeded: Bool) {
        let ready = self.state.withLock { state -> (waiters: [CheckedContinuation<Bool, Never>], allBound: Bool)? in
            precondition(state.remaining > 0, "more listeners reported than were counted")
            state.remaining -= 1
            if !succeeded { state.failed = true }
            guard state.remaining == 0 else { return nil }
            defer { state.waiters.removeAll() }
            return (state.waiters, !state.failed)
        }
        if let ready { for waiter in ready.waiters { waiter.resume(returning: ready.allBound) } }
    }

    /// Waits until every listener reported; true when all are bound.
    public func wait() async -> Bool {
        await withCheckedContinuation { continuation in
            let result = self.state.withLock { state -> Bool? in
                guard state.remaining > 0 else { return !state.failed }
                state.waiters.append(continuation)
                return nil
            }
            if let result { continuation.resume(returning: result) }
        }
    }
}
