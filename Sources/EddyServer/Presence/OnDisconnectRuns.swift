// Runs the onDisconnect writes of connections that ended (native or HTTP presence connections)
// and counts the runs still going, so a stopping eddyd waits for them before its databases
// close (the native listener, stopped after HTTP and before the databases, waits until idle).
//
// Invariants:
// - One connection's writes run in the order registered, one at a time, each as an ordinary
//   write with the identity it was registered with; a refused or failed one is logged and the
//   next runs.
// - `begin` is counted before `run` returns, so a caller that returns after `run` has made the
//   run visible to `isIdle`.

import EddyEngine
import EddyModel
import Logging
import Synchronization

final class OnDisconnectRuns: Sendable {
    private let running = Mutex(0)

    var isIdle: Bool { self.running.withLock { $0 == 0 } }

    /// Makes `writes` in the background (see the top of the file).
    func run(_ writes: [OnDisconnectWrite], data: DataDirectory, logger: Logger) {
        guard !writes.isEmpty else { return }
        self.running.withLock { $0 += 1 }
        Task {
            defer { self.running.withLock { $0 -= 1 } }
            for write in writes {
                do throws(EddyError) {
                    let engine = try data.engine(namespace: write.namespace, create: false)
                    _ = try await engine.write(write.operation, access: write.access)
                } catch {
                    logger.warning(
                        "an onDisconnect write was not made",
                        metadata: ["eddy.ns": "\(write.namespace)", "eddy.path": "\(write.operation.location)", "eddy.error": "\(error.message)"])
                }
            }
        }
    }
}
