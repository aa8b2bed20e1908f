// The engine's open `TreeJSONStream`s. RocksDB iterators and snapshots must be destroyed before
// their database closes, and a streamed answer may outlive the request that started it (a slow
// client, a shutdown), so the cursors live here, not in the streams:
// - `remove` (a stream finished or was dropped) releases the cursor's RocksDB objects while
//   holding the registry lock;
// - `closeAll` (Engine.close, before the database closes) marks the registry closed under that
//   lock and then releases every cursor, each waiting for a chunk being read from it.
// So once `closeAll` returns, no iterator or snapshot of the database is left, and a stream
// asking for its next chunk gets `shuttingDown`.

import EddyModel
import EddyStorage
import Synchronization

final class TreeStreamRegistry: Sendable {
    private struct State {
        var closed = false
        var nextID = 0
        var cursors: [Int: TreeJSONCursor] = [:]
    }

    private let state = Mutex(State())

    /// Registers a cursor over `path`; nil once the registry is closed.
    func open(database: Database, path: Path, pretty: Bool) -> TreeJSONStream? {
        let id: Int? = self.state.withLock { state in
            guard !state.closed else { return nil }
            state.nextID += 1
            state.cursors[state.nextID] = TreeJSONCursor(database: database, path: path, pretty: pretty)
            return state.nextID
        }
        return id.map { TreeJSONStream(id: $0, registry: self) }
    }

    func cursor(_ id: Int) -> TreeJSONCursor? {
        self.state.withLock { $0.cursors[id] }
    }

    func remove(_ id: Int) {
        self.state.withLock { state in
            state.cursors.removeValue(forKey: id)?.release()
        }
    }

    /// Releases every cursor; later `open`s return nil.
    func closeAll() {
        let cursors = self.state.withLock { state in
            state.closed = true
            defer { state.cursors = [:] }
            return Array(state.cursors.values)
        }
        for cursor in cursors { cursor.release() }
    }

    var count: Int { self.state.withLock { $0.cursors.count } }
}
