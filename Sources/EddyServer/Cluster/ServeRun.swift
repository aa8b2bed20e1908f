// One run of `EddyServer.serve` in one role, as a cluster node's runner (ClusterRunner) starts
// and stops it: what the role changes in the daemon (the write fence of a leader, the redirect
// of a follower), the data directory once it is open, and a stop that ends the run gracefully
// (requested before the run's services started, it takes effect as soon as they have).

import EddyEngine
import EddyModel
import ServiceLifecycle
import Synchronization

public final class ServeRun: Sendable {
    /// A leader's fence: its term while it provably holds the lease (EngineOptions.writeFence).
    let writeFence: (@Sendable () -> Result<UInt64, EddyError>)?
    /// A follower's leader HTTP URL: writes are answered 307 to it.
    let writeRedirect: String?
    /// A follower run of a cluster: a replica whose newest entries are not in the leader's
    /// history (a deposed leader's unconfirmed writes) is set aside and bootstrapped again.
    let discardsAnotherHistory: Bool
    private let state = Mutex<(group: ServiceGroup?, stopRequested: Bool, data: DataDirectory?)>((nil, false, nil))
    /// One element at most: a stop (then finished).
    private let stopSignal = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

    init(writeFence: (@Sendable () -> Result<UInt64, EddyError>)?, writeRedirect: String?, discardsAnotherHistory: Bool = false) {
        self.writeFence = writeFence
        self.writeRedirect = writeRedirect
        self.discardsAnotherHistory = discardsAnotherHistory
    }

    /// The run's data directory, once `serve` opened it.
    var data: DataDirectory? { self.state.withLock { $0.data } }

    func opened(_ data: DataDirectory) { self.state.withLock { $0.data = data } }

    /// Called by `serve` as its services start: waits for `stop()` and shuts them down then, or
    /// returns when the run ends on its own (a signal) and `finished()` is called.
    func started(_ group: ServiceGroup) async {
        self.state.withLock { $0.group = group }
        for await _ in self.stopSignal.stream {
            await group.triggerGracefulShutdown()
            return
        }
    }

    /// Ends the run gracefully (its `serve` returns).
    func stop() {
        self.state.withLock { $0.stopRequested = true }
        self.stopSignal.continuation.yield()
        self.stopSignal.continuation.finish()
    }

    /// The run ended: releases `started`.
    func finished() { self.stopSignal.continuation.finish() }

    var stopRequested: Bool { self.state.withLock { $0.stopRequested } }
}
