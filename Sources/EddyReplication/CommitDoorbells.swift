// Wakes log-server connections when their database commits: one commit observer per engine
// (registered the first time a follower of it connects) rings every connection of that engine.
// A ring is a `Void` in a connection's newest-1 stream, so rings coalesce and never queue up.

import EddyEngine
import Synchronization

final class CommitDoorbells: Sendable {
    private struct State {
        var rings: [UInt64: (engine: ObjectIdentifier, ring: AsyncStream<Void>.Continuation)] = [:]
        var observed: Set<ObjectIdentifier> = []
    }

    private let state = Mutex(State())

    func add(_ id: UInt64, engine: Engine, ring: AsyncStream<Void>.Continuation) {
        let key = ObjectIdentifier(engine)
        let observe = self.state.withLock { state -> Bool in
            state.rings[id] = (key, ring)
            return state.observed.insert(key).inserted
        }
        if observe {
            engine.observeCommits { [weak self] _ in self?.ring(key) }
        }
    }

    func remove(_ id: UInt64) { _ = self.state.withLock { $0.rings.removeValue(forKey: id) } }

    private func ring(_ engine: ObjectIdentifier) {
        let rings = self.state.withLock { $0.rings.values.filter { $0.engine == engine }.map(\.ring) }
        for ring in rings { ring.yield() }
    }
}
