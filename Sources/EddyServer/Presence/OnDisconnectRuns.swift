// Runs the onDisconnect writes of connections that ended (native or HTTP presence connections)
// and counts the runs still going, so a stopping eddyd waits for them before its databases
// close (the native listener, stopped after HTTP and before the databases, waits until idle).
// Holds the daemon-wide budget of registered onDisconnect bytes (`budget`, `bytesTotalMax`).
//
// Invariants:
// - One connection's writes in one namespace are replayed in the order registered into a
//   `SparseWriteTree` (sets, updates as a set per child, removes as a set of null, cancels as
//   forgets), as Firebase's server and clients hold them, and the tree's writes are made as one
//   write (one log entry, so an observer hears one change), with the identity they were
//   registered with.
// - If that write fails (the rules refuse a part of it), the tree's writes are made one at a
//   time in path order, and a refused or failed one is logged while the others still run. So do
//   the writes of a connection whose identity changed between its registrations, in the order
//   registered (its cancels then only drop what they dropped when registered).
// - `begin` is counted before `run` returns, so a caller that returns after `run` has made the
//   run visible to `isIdle`.

import EddyEngine
import EddyLog
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
            var namespaces: [String] = []
            for write in writes where !namespaces.contains(write.namespace) { namespaces.append(write.namespace) }
            for namespace in namespaces {
                let steps = writes.filter { $0.namespace == namespace }
                let lease: EngineLease
                do throws(EddyError) {
                    lease = try data.lease(namespace: namespace, create: false)
                } catch {
                    logger.warning("the onDisconnect writes were not made", metadata: ["eddy.ns": "\(namespace)", "eddy.error": "\(error.message)"])
                    continue
                }
                defer { lease.release() }
                let engine = lease.engine
                guard let (tree, access) = Self.replayed(steps) else {
                    for case let (.write(operation), access) in steps.map({ ($0.step, $0.access) }) {
                        await Self.make(operation, access: access, engine: engine, namespace: namespace, logger: logger)
                    }
                    continue
                }
                let parts = tree.writes()
                guard let whole = Self.oneWrite(parts) else { continue }
                do throws(EddyError) {
                    _ = try await engine.write(whole, access: access)
                    logger.debug("onDisconnect writes made", metadata: ["eddy.ns": "\(namespace)", "eddy.writes": "\(parts.count)"])
                } catch {
                    for (path, value) in parts {
                        await Self.make(.set(path, value), access: access, engine: engine, namespace: namespace, logger: logger)
                    }
                }
            }
        }
    }

    /// The tree of one namespace's steps and the identity they share; nil when their
    /// identities differ.
    static func replayed(_ steps: [OnDisconnectWrite]) -> (SparseWriteTree, Access)? {
        var access: Access?
        var tree = SparseWriteTree()
        for step in steps {
            switch step.step {
            case .cancel(let location):
                tree.forget(location)
            case .write(let operation):
                if let access, access.isAdmin != step.access.isAdmin || access.auth != step.access.auth { return nil }
                access = step.access
                switch operation {
                case .set(let path, let value): tree.remember(value, at: path)
                case .remove(let path): tree.remember(.null, at: path)
                case .update(let path, let changes): for change in changes { tree.remember(change.value, at: path.appending(change.path)) }
                case .push: break  // refused when registered
                }
            }
        }
        guard let access else { return nil }
        return (tree, access)
    }

    /// The tree's writes as one operation: a set when there is one, else an update at the root
    /// (the paths are disjoint); nil when there is none.
    static func oneWrite(_ parts: [(path: Path, value: Value)]) -> WriteOperation? {
        guard let first = parts.first else { return nil }
        guard parts.count > 1 else { return .set(first.path, first.value) }
        return .update(.root, parts.map { LogEntry.Change(path: $0.path, value: $0.value) })
    }

    private static func make(_ operation: WriteOperation, access: Access, engine: Engine, namespace: String, logger: Logger) async {
        do throws(EddyError) {
            _ = try await engine.write(operation, access: access)
        } catch {
            logger.warning(
                "an onDisconnect write was not made",
                metadata: ["eddy.ns": "\(namespace)", "eddy.path": "\(operation.location)", "eddy.error": "\(error.message)"])
        }
    }
}
