// Runs the onDisconnect writes of connections that ended (native or HTTP presence connections)
// and counts the runs still going, so a stopping eddyd waits for them before its databases
// close (the native listener, stopped after HTTP and before the databases, waits until idle).
// Holds the daemon-wide budget of registered onDisconnect bytes (`budget`, `bytesTotalMax`).
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
    /// The bytes every connection's registered onDisconnect writes may hold together.
    static let bytesTotalMax = 256 << 20

    private let running = Mutex(0)
    /// Registered onDisconnect bytes of every connection (`OnDisconnectList`).
    let budget: MemoryBudget

    init(bytesTotalMax: Int = OnDisconnectRuns.bytesTotalMax) {
        self.budget = MemoryBudget(bytesMax: bytesTotalMax)
    }

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
