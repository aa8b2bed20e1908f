// One observer (`observe(_:with:)` and friends): a server subscription of its location or
// query, the copy of the data it keeps, and the delivery of Firebase's events to the block on
// the database's callback queue, in order.
//
// The copy starts from the subscription's first batch (its whole value) and follows every
// later batch (child events carry whole children; a value event carries what changed). When
// the connection is lost, or the server says the observer fell behind, it subscribes again
// from the last log id it applied (`since`), with backoff (100 ms doubling to 5 s): no event
// is missed or repeated across a daemon restart. Removed (`removeObserver`), it unsubscribes,
// and no callback runs after the removal that was not already running.

import EddyModel
import EddyProtocol
import Foundation
import Synchronization

final class Listener: Sendable {
    typealias Block = (DataSnapshot, String?) -> Void
    typealias CancelBlock = (any Error) -> Void

    let handle: DatabaseHandle
    let query: DatabaseQuery
    let eventType: DataEventType
    /// Removed after its first delivery (`observeSingleEvent`).
    let once: Bool
    private let block: UncheckedSendable<Block>
    private let cancel: UncheckedSendable<CancelBlock?>

    private struct State {
        var subscription: UInt64?
        var cache: Value = .null
        var started = false
        var lastLogID: String?
        var removed = false
        var retryMilliseconds = 100
        /// The server has no index for the query: the whole location is listened to and the
        /// query evaluated here (`LocalQuery`), as Firebase's clients do.
        var local = false
        var window: [LocalQuery.Entry] = []
    }

    private let state = Mutex(State())

    init(handle: DatabaseHandle, query: DatabaseQuery, eventType: DataEventType, once: Bool, block: @escaping Block, cancel: CancelBlock?) {
        self.handle = handle
        self.query = query
        self.eventType = eventType
        self.once = once
        self.block = UncheckedSendable(block)
        self.cancel = UncheckedSendable(cancel)
    }

    var database: Database { self.query.database }

    func start() {
        if let error = self.query.spec.error {
            self.fail(DatabaseError(.invalidQuery, error))
            return
        }
        self.subscribe()
    }

    /// Stops it: no later delivery calls the block.
    func remove() {
        let subscription = self.state.withLock { state -> UInt64? in
            state.removed = true
            defer { state.subscription = nil }
            return state.subscription
        }
        if let subscription { self.database.connection.unsubscribe(subscription) }
    }

    private func subscribe() {
        let (since, local) = self.state.withLock { ($0.lastLogID, $0.local) }
        var payload: [String: Value] = [
            "path": .string(self.query.path.description),
            "events": .string(self.eventType == .value || local ? "value" : "all"),
        ]
        if !local, let parameters = self.query.spec.parameters { payload["query"] = parameters }
        if let since { payload["since"] = .string(since) }
        let connection = self.database.connection
        let id = connection.subscribe(
            .object(payload),
            ClientConnection.Subscription(
                onFrame: { [weak self] kind, payload in self?.received(kind, payload) },
                onEnd: { [weak self] error in self?.ended(error) }))
        let stale = self.state.withLock { state -> Bool in
            if state.removed { return true }
            state.subscription = id
            return false
        }
        if stale { connection.unsubscribe(id) }
    }

    private func received(_ kind: Frame.Kind, _ payload: Value) {
        switch kind {
        case .subscribed:
            self.state.withLock { $0.retryMilliseconds = 100 }
        case .events:
            self.apply(Self.list(payload["events"]))
        case .behind:
            // Too far behind to be kept up: subscribe again from the last entry applied.
            self.resubscribe(after: 0)
        case .error:
            let error = ClientConnection.error(payload)
            let switched = self.state.withLock { state -> Bool in
                guard LocalQuery.isMissingIndex(error), !state.local, !state.removed else { return false }
                state.local = true
                state.subscription = nil
                state.cache = .null
                state.window = []
                state.lastLogID = nil
                return true
            }
            if switched { self.subscribe() } else { self.fail(error) }
        default:
            break
        }
    }

    private func ended(_ error: DatabaseError) {
        let delay = self.state.withLock { state -> Int in
            let delay = state.retryMilliseconds
            state.retryMilliseconds = min(5000, state.retryMilliseconds * 2)
            return delay
        }
        self.resubscribe(after: delay)
    }

    private func resubscribe(after milliseconds: Int) {
        let removed = self.state.withLock { state -> Bool in
            state.subscription = nil
            return state.removed
        }
        guard !removed else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { [weak self] in
            self?.subscribe()
        }
    }

    private func fail(_ error: DatabaseError) {
        let removed = self.state.withLock { state -> Bool in
            defer { state.removed = true }
            return state.removed
        }
        guard !removed else { return }
        self.database.forget(self.handle)
        let cancel = self.cancel
        self.database.deliver { cancel.value?(error) }
    }

    /// Applies one `events` frame to the copy and delivers what the observer asked for.
    private func apply(_ events: [Value]) {
        var deliveries: [(DataSnapshot, String?)] = []
        let ref = self.query.ref
        let order = self.query.spec.effectiveOrder
        self.state.withLock { state in
            guard !state.removed else { return }
            if state.local {
                deliveries = self.applyLocally(events, &state)
                return
            }
            for event in events {
                guard case .string(let kind) = event["kind"] else { continue }
                if case .string(let id) = event["logID"] { state.lastLogID = id }
                let key: String? = if case .string(let k) = event["key"] { k } else { nil }
                let previous: String? = if case .string(let p) = event["prev"] { p } else { nil }
                switch kind {
                case "value":
                    if case .object(let changes) = event["changes"] {
                        for change in Self.list(.object(changes)) {
                            Self.change(change)?.apply(to: &state.cache)
                        }
                    } else {
                        state.cache = event["value"]
                    }
                    state.started = true
                    if self.eventType == .value { deliveries.append((DataSnapshot(ref: ref, value: state.cache, order: order), nil)) }
                case "child_added", "child_changed", "child_moved", "child_removed":
                    guard let key else { continue }
                    let child = event["value"]
                    if kind == "child_removed" {
                        state.cache.set(.null, at: Path(validatedKeys: [key]))
                    } else {
                        state.cache.set(child, at: Path(validatedKeys: [key]))
                    }
                    if kind == self.eventType.wireName {
                        deliveries.append((DataSnapshot(ref: ref.child(Path(validatedKeys: [key])), value: child, order: order), previous))
                    }
                default:
                    continue
                }
            }
        }
        guard !deliveries.isEmpty else { return }
        let block = self.block
        let once = self.once
        let delivered = deliveries
        self.database.deliver { [weak self] in
            guard let self else { return }
            for (snapshot, previous) in delivered {
                guard self.isLive else { return }
                if once {
                    self.database.removeObserver(self.handle)
                }
                block.value(snapshot, previous)
                if once { return }
            }
        }
    }

    /// For a query evaluated here: applies the location's value events, then delivers the
    /// events from the previous window to the new one.
    private func applyLocally(_ events: [Value], _ state: inout State) -> [(DataSnapshot, String?)] {
        for event in events {
            guard event["kind"] == .string("value") else { continue }
            if case .string(let id) = event["logID"] { state.lastLogID = id }
            if case .object(let changes) = event["changes"] {
                for change in Self.list(.object(changes)) { Self.change(change)?.apply(to: &state.cache) }
            } else {
                state.cache = event["value"]
            }
        }
        let ref = self.query.ref
        let spec = self.query.spec
        let window = LocalQuery.window(state.cache, spec)
        let first = !state.started
        state.started = true
        defer { state.window = window }
        if self.eventType == .value {
            if !first, window.map(\.key) == state.window.map(\.key), LocalQuery.object(window) == LocalQuery.object(state.window) { return [] }
            return [(DataSnapshot(ref: ref, value: LocalQuery.object(window), order: spec.effectiveOrder), nil)]
        }
        return LocalQuery.events(from: state.window, to: window, order: spec.effectiveOrder)
            .filter { $0.kind == self.eventType }
            .map { (DataSnapshot(ref: ref.child(Path(validatedKeys: [$0.key])), value: $0.value, order: spec.effectiveOrder), $0.previous) }
    }

    private var isLive: Bool { self.state.withLock { !$0.removed } }

    /// A JSON array arrives as an object keyed "0", "1", ...: its elements in order.
    static func list(_ value: Value) -> [Value] {
        guard case .object(let elements) = value else { return [] }
        return elements.compactMap { key, element in Int(key).map { ($0, element) } }.sorted { $0.0 < $1.0 }.map(\.1)
    }

    static func change(_ value: Value) -> ValueChange? {
        guard case .string(let op) = value["op"], case .string(let pathText) = value["path"],
            let path = try? Path(pathText)
        else { return nil }
        switch op {
        case "put": return .put(path: path, value: value["data"])
        case "patch":
            guard case .object(let children) = value["data"] else { return nil }
            return .patch(path: path, children: children)
        default: return nil
        }
    }
}

/// Carries a value the caller promises to use safely across threads (the user's blocks,
/// which Firebase's API takes without `@Sendable` and calls on the callback queue).
struct UncheckedSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
