// Delegation, for code that prefers it to blocks: an object adopting
// `DatabaseObserverDelegate` is told each event of the queries it was added to. Delegates are
// held weakly: one that goes away stops being called, and its observer is removed with the
// next event. `DatabaseDelegateRegistry` is the multi-delegate form: one observation of a
// query shared by any number of (weakly held) delegates.

import Foundation
import Synchronization

public protocol DatabaseObserverDelegate: AnyObject {
    /// An event of `query`, on the database's callback queue.
    func query(_ query: DatabaseQuery, didReceive eventType: DataEventType, snapshot: DataSnapshot, previousSiblingKey: String?)
    /// The server refused or ended the observation (no more events follow).
    func query(_ query: DatabaseQuery, didFailWith error: any Error)
}

extension DatabaseObserverDelegate {
    public func query(_ query: DatabaseQuery, didFailWith error: any Error) {}
}

/// Weak references to delegates, called in the order they were added.
public final class DatabaseDelegateRegistry: Sendable {
    private struct State {
        var entries: [WeakDelegate] = []
        var handles: [DatabaseHandle] = []
    }

    public let query: DatabaseQuery
    private let state = Mutex(State())

    /// Observes `eventTypes` of `query` once for all the delegates added.
    public init(query: DatabaseQuery, eventTypes: [DataEventType]) {
        self.query = query
        let handles = eventTypes.map { eventType in
            query.observe(
                eventType,
                andPreviousSiblingKeyWith: { [weak self] snapshot, previous in
                    self?.forEach { $0.query(query, didReceive: eventType, snapshot: snapshot, previousSiblingKey: previous) }
                },
                withCancel: { [weak self] error in self?.forEach { $0.query(query, didFailWith: error) } })
        }
        self.state.withLock { $0.handles = handles }
    }

    /// Adds a delegate (held weakly); adding one twice has no effect.
    public func add(_ delegate: any DatabaseObserverDelegate) {
        self.state.withLock { state in
            state.entries.removeAll { $0.delegate == nil }
            guard !state.entries.contains(where: { $0.delegate === delegate }) else { return }
            state.entries.append(WeakDelegate(delegate))
        }
    }

    public func remove(_ delegate: any DatabaseObserverDelegate) {
        self.state.withLock { state in state.entries.removeAll { $0.delegate == nil || $0.delegate === delegate } }
    }

    /// The delegates still alive.
    public var delegates: [any DatabaseObserverDelegate] {
        let entries = self.state.withLock { $0.entries }
        return entries.compactMap(\.delegate)
    }

    /// Ends the observation; no delegate is called afterwards.
    public func invalidate() {
        let handles = self.state.withLock { state -> [DatabaseHandle] in
            defer {
                state.handles.removeAll()
                state.entries.removeAll()
            }
            return state.handles
        }
        for handle in handles { self.query.removeObserver(withHandle: handle) }
    }

    deinit {
        for handle in self.state.withLock({ $0.handles }) { self.query.removeObserver(withHandle: handle) }
    }

    private func forEach(_ body: (any DatabaseObserverDelegate) -> Void) {
        for delegate in self.delegates { body(delegate) }
    }
}

extension DatabaseQuery {
    /// Tells `delegate` (held weakly) each event of `eventTypes`; returns the handles, for
    /// `removeObserver(withHandle:)`. Once the delegate is gone, its observers remove
    /// themselves at their next event.
    @discardableResult
    public func addDelegate(_ delegate: any DatabaseObserverDelegate, for eventTypes: [DataEventType]) -> [DatabaseHandle] {
        let weakDelegate = WeakDelegate(delegate)
        let handles = Synchronized<[DatabaseHandle]>([])
        let database = self.database
        handles.value = eventTypes.map { eventType in
            self.observe(
                eventType,
                andPreviousSiblingKeyWith: { [weak self] snapshot, previous in
                    guard let self, let delegate = weakDelegate.delegate else {
                        for handle in handles.value { database.removeObserver(handle) }
                        return
                    }
                    delegate.query(self, didReceive: eventType, snapshot: snapshot, previousSiblingKey: previous)
                },
                withCancel: { [weak self] error in
                    guard let self else { return }
                    weakDelegate.delegate?.query(self, didFailWith: error)
                })
        }
        return handles.value
    }
}

private final class WeakDelegate: @unchecked Sendable {
    // @unchecked: the reference is written once, at init.
    weak var delegate: (any DatabaseObserverDelegate)?
    init(_ delegate: any DatabaseObserverDelegate) { self.delegate = delegate }
}
