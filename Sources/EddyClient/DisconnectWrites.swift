// The onDisconnect writes the server registered for this client's current connection, kept so
// the client can show them too when the connection ends, as Firebase's clients do: when
// `.info/connected` turns false (goOffline, a lost connection) the views that hold their
// locations show the writes at once, as if the server's events had come, without waiting for
// the connection to come back. The server makes the same writes; once connected again the
// views load the server's data, which replaces these estimates (a write the rules refused
// then disappears).
//
// Invariants:
// - Only writes the server acknowledged are held (a refused one is never shown), in the order
//   registered; a cancel drops those whose location is at or below its path, as eddyd does.
// - Taken once when the connection ends: a write shown then is not shown again on the next
//   loss (the server ran it once; presence code registers again when connected).
// - Bounded as the server bounds a connection's writes (`countMax`); beyond, the oldest go.

import EddyModel
import Synchronization

final class DisconnectWrites: Sendable {
    struct Write: Sendable {
        /// Where it was registered (what a cancel at or above removes).
        let location: Path
        /// As puts at absolute paths: one for a set or remove, one per child path of an update.
        let puts: [PendingWrite.Put]
    }

    static let countMax = 1000

    private let writes = Mutex<[Write]>([])

    /// The server registered a write: `op` set, update or remove, with its value.
    func registered(_ op: String, at location: Path, value: Value) {
        var puts: [PendingWrite.Put] = []
        switch op {
        case "update":
            guard case .object(let children) = value else { return }
            for (childPath, child) in children.sorted(by: { $0.key < $1.key }) {
                guard let relative = try? Path(childPath) else { continue }
                puts.append(PendingWrite.Put(path: location.appending(relative), value: child))
            }
        case "remove":
            puts = [PendingWrite.Put(path: location, value: .null)]
        default:
            puts = [PendingWrite.Put(path: location, value: value)]
        }
        self.writes.withLock { writes in
            writes.append(Write(location: location, puts: puts))
            if writes.count > Self.countMax { writes.removeFirst(writes.count - Self.countMax) }
        }
    }

    /// The server cancelled the writes at or below `location`.
    func cancelled(at location: Path) {
        self.writes.withLock { writes in writes.removeAll { location.isAncestorOrSelf(of: $0.location) } }
    }

    /// The connection ended: every write held, in order, and none after.
    func takeAll() -> [Write] {
        self.writes.withLock { writes in
            defer { writes.removeAll() }
            return writes
        }
    }
}
