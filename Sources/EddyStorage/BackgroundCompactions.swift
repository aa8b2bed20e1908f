// Manual compactions of one database, run one after another on a queue of their own so that
// whoever asks (the committer, after an index build) does not wait: a compaction rewrites every
// file overlapping its range, seconds for tens of MiB.
//
// Invariants: at most `pendingMax` compactions wait or run (more are refused, not queued); no
// compaction starts after `stop`; `stop` returns only once none runs or waits, so the database
// may free its handles after it. A compaction running when `stop` is called ends early
// (RocksDB's DisableManualCompaction, which `stop`'s caller passes in).

import Dispatch
import Synchronization

final class BackgroundCompactions: Sendable {
    /// Compactions queued or running at most; one per index build is far below it.
    static let pendingMax = 64
    private let queue = DispatchQueue(label: "eddy-compaction")
    private let outstanding = DispatchGroup()
    private let state = Mutex<(stopped: Bool, pending: Int)>((stopped: false, pending: 0))

    /// Compactions queued or running.
    var pending: Int { self.state.withLock { $0.pending } }

    /// Queues `compaction`; false (and nothing queued) once stopped or with `pendingMax`
    /// already pending.
    func start(_ compaction: @escaping @Sendable () -> Void) -> Bool {
        let admitted = self.state.withLock { state -> Bool in
            guard !state.stopped, state.pending < Self.pendingMax else { return false }
            state.pending += 1
            self.outstanding.enter()
            return true
        }
        guard admitted else { return false }
        self.queue.async {
            if !self.state.withLock({ $0.stopped }) { compaction() }
            self.state.withLock { $0.pending -= 1 }
            self.outstanding.leave()
        }
        return true
    }

    /// Refuses new compactions, calls `cancelRunning` (which must make a running one return),
    /// and waits until every queued one has returned or been skipped. Idempotent.
    func stop(cancelRunning: () -> Void) {
        self.state.withLock { $0.stopped = true }
        cancelRunning()
        self.outstanding.wait()
    }
}
