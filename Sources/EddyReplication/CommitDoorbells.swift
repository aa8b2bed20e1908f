// Wakes whoever streams a database's log (follower connections, `eddy tail` streams) when it
// commits: one commit observer per engine (registered the first time something listens to it)
// rings every registered bell of that engine. A bell is the continuation of a newest-1
// `AsyncStream<Void>`, so rings coalesce and never queue up. Engines are told apart by
// `Engine.instanceNumber` (a namespace closed for room and opened again is another engine, which
// needs its own observer); the entries of engines gone are pruned. Thread-safe.

import EddyEngine
import Synchronization

public final class CommitDoorbells: Sendable {
    private struct State {
        var bells: [UInt64: (engine: UInt64, ring: AsyncStream<Void>.Continuation)] = [:]
        /// The engines observed, weakly: the observer goes with its engine.
        var observed: [UInt64: WeakEngine] = [:]
        var nextToken: UInt64 = 1
    }

    private let state = Mutex(State())

    public init() {}

    /// Rings `bell` after every commit of `engine` until `remove(token)`.
    public func add(engine: Engine, bell: AsyncStream<Void>.Continuation) -> UInt64 {
        let key = engine.instanceNumber
        let (token, observe) = self.state.withLock { state -> (UInt64, Bool) in
            let token = state.nextToken
            state.nextToken += 1
            state.bells[token] = (key, bell)
            guard state.observed[key] == nil else { return (token, false) }
            state.observed = state.observed.filter { $0.value.engine != nil }
            state.observed[key] = WeakEngine(engine: engine)
            return (token, true)
        }
        if observe {
            engine.observeCommits { [weak self] _ in self?.ring(key) }
        }
        return token
    }

    public func remove(_ token: UInt64) { _ = self.state.withLock { $0.bells.removeValue(forKey: token) } }

    private func ring(_ engine: UInt64) {
        let bells = self.state.withLock { $0.bells.values.filter { $0.engine == engine }.map(\.ring) }
        for bell in bells { bell.yield() }
    }
}

private struct WeakEngine {
    weak var engine: Engine?
}
