// The onDisconnect writes the server registered for this client's current connection, kept so
// the client can show them too when the connection ends, as Firebase's clients do: when
// `.info/connected` turns false (goOffline, a lost connection) the views that hold their
// locations show the writes at once, as if the server's events had come, without waiting for
// the connection to come back. The server makes the same writes; once connected again the
// views load the server's data, which replaces these estimates (a write the rules refused
// then disappears).
//
// Invariants:
// - Only writes the server acknowledged are held (a refused one is never shown), replayed in the
//   order registered into a `SparseWriteTree`, the model eddyd makes them with: a cancel
//   forgets its path, in the writes above it too.
// - Taken once when the connection ends: a write shown then is not shown again on the next
//   loss (the server ran it once; presence code registers again when connected).
// - Bounded as the server bounds a connection's writes: the tree holds at most what eddyd
//   accepted, which is at most 1,000 registrations and 16 MiB.

import EddyModel
import Synchronization

final class DisconnectWrites: Sendable {
    private let tree = Mutex(SparseWriteTree())

    /// The server registered a write: `op` set, update or remove, with its value.
    func registered(_ op: String, at location: Path, value: Value) {
        self.tree.withLock { tree in
            switch op {
            case "update":
                guard case .object(let children) = value else { return }
                for (childPath, child) in children.sorted(by: { $0.key < $1.key }) {
                    guard let relative = try? Path(childPath) else { continue }
                    tree.remember(child, at: location.appending(relative))
                }
            case "remove":
                tree.remember(.null, at: location)
            default:
                tree.remember(value, at: location)
            }
        }
    }

    /// The server cancelled the writes at `location` (at and below it, and there in the
    /// writes above it).
    func cancelled(at location: Path) {
        self.tree.withLock { $0.forget(location) }
    }

    /// The connection ended: the writes to show, as puts at disjoint paths, and none after.
    func takeAll() -> [PendingWrite.Put] {
        self.tree.withLock { tree in
            defer { tree = SparseWriteTree() }
            return tree.writes().map { PendingWrite.Put(path: $0.path, value: $0.value) }
        }
    }
}
