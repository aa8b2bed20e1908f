// What all observers of one location or query share: one server subscription, one copy of
// the data, and the delivery of Firebase's events to each observer on the database's callback
// queue, in Firebase's order: for each change, the events in the order the change produced
// them (removed, added, moved, changed, then value), each to every observer of its type in
// the order they were registered. An observer added to a view that is already live gets its
// initial events (child_added for each child in order, then value) from the view's copy.
//
// The copy is in Firebase's export form (the subscription asks for priorities): snapshots
// answer `priority`, and children list in priority order by default.
//
// The copy starts from the subscription's first batch and follows every later one. When the
// connection is lost, or the server says the view fell behind, it subscribes again from the
// last log id it applied (`since`), with backoff (100 ms doubling to 5 s): no event is missed
// or repeated across a daemon restart. When the server has no index for the query, the view
// listens to the whole location and evaluates the query itself (`LocalQuery`), as Firebase's
// clients do. The last observer removed ends the subscription.
//
// What observers see is the copy with the client's waiting writes on top (`visible`). Invariant:
// `shownWindow`/`shownValue` are that, computed from the copy of `shownBasis.cacheVersion` and
// the waiting writes `shownBasis.writes`; a change then recomputes only the children it can have
// touched (`showChanged`), and anything else recomputes it all (`show`).

import EddyModel
import EddyProtocol
import Foundation
import Synchronization

final class QueryView: Sendable {
    typealias Block = (DataSnapshot, String?) -> Void
    typealias CancelBlock = (any Error) -> Void

    struct Registration: Sendable {
        let handle: DatabaseHandle
        let eventType: DataEventType
        /// Removed after its first delivery (`observeSingleEvent`).
        let once: Bool
        let block: UncheckedSendable<Block>
        let cancel: UncheckedSendable<CancelBlock?>
        /// A change-set observer's token: a write made `withoutNotifying` it calls `silent`
        /// (so it keeps its copy) instead of `block`.
        var token: ObjectIdentifier? = nil
        var silent: UncheckedSendable<Block>? = nil
    }

    /// An event of the view, before it is handed to observers.
    struct Event: Sendable {
        let kind: DataEventType
        let snapshot: DataSnapshot
        let previous: String?
    }

    let query: DatabaseQuery
    /// The key of the view in its database (`Database.views`).
    let id: String

    private struct State {
        var registrations: [Registration] = []
        /// Handles removed, with the number of batches raised before the removal: a batch raised
        /// before it is still delivered to the handle, as Firebase delivers the events it raised
        /// before `removeObserver`; a later one is not (a `once` observer hears one event only).
        var removed: [DatabaseHandle: UInt64] = [:]
        /// Batches of events raised so far (each `deliver`).
        var raised: UInt64 = 0
        var subscription: UInt64?
        /// The server's data (the whole location, or the query's window when the server
        /// evaluates the query).
        var cache: Value = .null
        /// Bumped at every change of `cache`, so `shownBasis` can tell whether it still holds.
        var cacheVersion: UInt64 = 0
        /// What observers were last shown: the window and the value event's value, the
        /// server's data with the client's waiting writes on top (`PendingWrites`).
        var shownWindow: [LocalQuery.Entry] = []
        /// A child of `shownWindow` has a priority (it is then not in key order).
        var shownHasPriorities = false
        var shownValue: Value = .null
        /// What `shownWindow` and `shownValue` were computed from (`showChanged`); nil when
        /// unknown (after a partial show).
        var shownBasis: ShownBasis?
        var started = false
        /// A value event was raised before the server's first batch, from a waiting write that
        /// replaced the location whole (`writesDetermine`).
        var valueShownFromWrites = false
        /// False from each loss of the subscription (and each subscribe) until the first batch
        /// of the next is applied.
        var caughtUp = false
        var lastLogID: String?
        /// When the last events frame arrived: a stream still delivering older entries is
        /// behind, not done (`shows`).
        var lastFrameAt: Date?
        var ended = false
        var retryMilliseconds = 100
        var local = false
        /// Counts subscriptions and their losses: frames of a subscription the view has taken
        /// as lost (`goOffline`, a dropped connection) that were read before its end are
        /// dropped, so nothing of it is raised after the loss.
        var generation: UInt64 = 0
    }

    /// The copy's version and the waiting writes a show put on it, in order, with the children
    /// of the location each one touches (nil: the location itself or an ancestor).
    private struct ShownBasis {
        var cacheVersion: UInt64
        var writes: [UInt64]
        var keys: [UInt64: Set<String>?]
    }

    private let state = Mutex(State())

    init(query: DatabaseQuery, id: String) {
        self.query = query
        self.id = id
        // A query with only an order loads all the location's data, as Firebase's does: its
        // value is the location's (a primitive too), its children in the order; the whole
        // location is subscribed to and ordered here (no index needed).
        if query.spec.loadsAllData && !query.spec.isDefault { self.state.withLock { $0.local = true } }
    }

    var database: Database { self.query.database }

    /// Adds an observer; starts the subscription for the first one, or replays the initial
    /// events from the copy for a later one. False, having done nothing, when the view has
    /// ended: its last observer went (or the server refused it) after the database looked it
    /// up, and the observer needs a new view (`Database.observe`).
    func add(_ registration: Registration) -> Bool {
        if let error = self.query.spec.error {
            self.deliverCancel(registration, DatabaseError(.invalidQuery, error))
            return true
        }
        let first = self.state.withLock { state -> Bool? in
            guard !state.ended else { return nil }
            state.registrations.append(registration)
            // Queued under the lock, so they come before the events of any later change.
            if state.started || state.valueShownFromWrites || !state.shownWindow.isEmpty {
                self.deliver(self.initialEvents(state, withValue: state.started || state.valueShownFromWrites), to: [registration], state: &state)
            }
            return state.registrations.count == 1 && state.subscription == nil && !state.started
        }
        guard let first else { return false }
        if first { self.subscribe() }
        return true
    }

    /// Removes an observer; true when it was the last one (the view is then ended).
    @discardableResult
    func remove(_ handle: DatabaseHandle) -> Bool {
        let (last, subscription) = self.state.withLock { state -> (Bool, UInt64?) in
            state.registrations.removeAll { $0.handle == handle }
            if state.removed[handle] == nil { state.removed[handle] = state.raised }
            guard state.registrations.isEmpty else { return (false, nil) }
            state.ended = true
            defer { state.subscription = nil }
            return (true, state.subscription)
        }
        if let subscription { self.database.connection.unsubscribe(subscription) }
        return last
    }

    var handles: [DatabaseHandle] { self.state.withLock { $0.registrations.map(\.handle) } }

    private func subscribe() {
        let (since, local, generation) = self.state.withLock { state in
            state.caughtUp = false
            state.generation += 1
            return (state.lastLogID, state.local, state.generation)
        }
        // Value changes only: the child events are derived here from the windows before and
        // after each change (the server then keeps no copy of a plain location). In export
        // form: the copy holds priorities (a snapshot's `priority`, priority order).
        var payload: [String: Value] = [
            "path": .string(self.query.path.description), "events": .string("value"), "priorities": .bool(true),
        ]
        if !local, let parameters = self.query.spec.parameters { payload["query"] = parameters }
        if let since { payload["since"] = .string(since) }
        let connection = self.database.connection
        let id = connection.subscribe(
            .object(payload),
            ClientConnection.Subscription(
                onFrame: { [weak self] kind, payload in self?.received(kind, payload, generation: generation) },
                onEnd: { [weak self] error in self?.lost(error, generation: generation) }))
        let stale = self.state.withLock { state -> Bool in
            if state.ended { return true }
            state.subscription = id
            return false
        }
        if stale { connection.unsubscribe(id) }
    }

    private func received(_ kind: Frame.Kind, _ payload: Value, generation: UInt64) {
        guard self.state.withLock({ $0.generation == generation }) else { return }
        switch kind {
        case .subscribed:
            self.state.withLock { $0.retryMilliseconds = 100 }
        case .events:
            let events = QueryView.list(payload["events"])
            guard let end = events.firstIndex(where: { $0["kind"] == .string("cancel") }) else {
                self.apply(events, generation: generation)
                return
            }
            if end > 0 { self.apply(Array(events[..<end]), generation: generation) }
            self.listenEnded(events[end]["value"])
        case .behind:
            self.resubscribe(after: 0)
        case .error:
            let error = ClientConnection.error(payload)
            let switched = self.state.withLock { state -> Bool in
                guard LocalQuery.isMissingIndex(error), !state.local, !state.ended else { return false }
                state.local = true
                state.subscription = nil
                state.cache = .null
                state.cacheVersion &+= 1
                state.lastLogID = nil
                return true
            }
            if switched { self.subscribe() } else { self.fail(error) }
        default:
            break
        }
    }

    private func lost(_ error: DatabaseError, generation: UInt64) {
        let delay = self.state.withLock { state -> Int? in
            guard state.generation == generation else { return nil }  // an earlier subscription's
            state.generation += 1
            let delay = state.retryMilliseconds
            state.retryMilliseconds = min(5000, state.retryMilliseconds * 2)
            return delay
        }
        guard let delay else { return }
        self.resubscribe(after: delay)
    }

    private func resubscribe(after milliseconds: Int) {
        let ended = self.state.withLock { state -> Bool in
            state.subscription = nil
            // Not caught up from now until the new subscription's first batch: the server's
            // events of this client's writes answered meanwhile do not reach the copy, so the
            // view shows those writes until then (`shows`).
            state.caughtUp = false
            return state.ended
        }
        guard !ended else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { [weak self] in
            self?.subscribe()
        }
    }

    /// The server ended the listen with a `cancel` event: a rules change took the read away
    /// (every observer's cancel block, with permission denied, as Firebase's SDK does), or the
    /// index its query needs was removed (subscribe again: the server then refuses the query and
    /// the view evaluates it here, as when the index was never there).
    private func listenEnded(_ reason: Value) {
        var message = "the server ended the listen"
        if case .string(let text) = reason { message = text }
        if let id = self.state.withLock({ $0.subscription }) { self.database.connection.unsubscribe(id) }
        if message.hasPrefix("Permission denied") {
            self.fail(DatabaseError(.permissionDenied, message))
        } else {
            self.resubscribe(after: 0)
        }
    }

    /// The server refused the view: every observer's cancel block, and the view ends.
    private func fail(_ error: DatabaseError) {
        let registrations = self.state.withLock { state -> [Registration] in
            state.ended = true
            defer { state.registrations.removeAll() }
            return state.registrations
        }
        self.database.forget(self)
        for registration in registrations { self.deliverCancel(registration, error) }
    }

    private func deliverCancel(_ registration: Registration, _ error: DatabaseError) {
        self.database.deliver { registration.cancel.value?(error) }
    }

    // MARK: Events

    /// Applies one `events` frame to the copy and delivers the events it produced.
    private func apply(_ wireEvents: [Value], generation: UInt64) {
        if !self.state.withLock({ $0.started }) {
            self.waitForWritesBeingMade()
            if let value = self.wholeFirstValue(wireEvents) { self.database.seedDescendants(of: self, from: value) }
        }
        self.state.withLock { state in
            guard !state.ended, state.generation == generation else { return }
            let first = !state.started
            let versionBefore = state.cacheVersion
            state.lastFrameAt = Date()
            // The children the batch touched, when it names them (nil: look at everything).
            var touched: Set<String>? = []
            for event in wireEvents where event["kind"] == .string("value") {
                if case .string(let id) = event["logID"] { state.lastLogID = id }
                if case .object(let changes) = event["changes"] {
                    for wire in QueryView.list(.object(changes)) {
                        guard let change = QueryView.change(wire) else { continue }
                        change.applyExport(to: &state.cache)
                        state.cacheVersion &+= 1
                        if let key = change.path.keys.first {
                            touched?.insert(key)
                        } else if case .patch(_, let children) = change {
                            touched?.formUnion(children.keys)
                        } else {
                            touched = nil
                        }
                    }
                } else {
                    state.cache = event["value"].normalized()
                    state.cacheVersion &+= 1
                    touched = nil
                }
            }
            state.started = true
            state.caughtUp = true
            if !first, let touched, self.showChanged(&state, keys: touched, cacheVersion: versionBefore, silenced: []) {
                // Only the children the batch touched (and those of writes answered since) changed.
            } else {
                // A value already raised from a write that replaced the location is raised
                // again only if the server's data differs.
                self.show(&state, first: first && !state.valueShownFromWrites, cause: nil)
            }
        }
        self.database.pruneAcknowledgedWrites()
    }

    /// The whole location's data in this view's first batch, when its descendants' views may be
    /// started from it (`Database.seedDescendants`): the view holds the whole location and its
    /// subscriptions are answered in order on one connection (the native protocol), so a view
    /// below, subscribed after it, never gets older data than this.
    private func wholeFirstValue(_ wireEvents: [Value]) -> Value? {
        guard self.query.spec.loadsAllData, self.database.connection is ClientConnection,
            let event = wireEvents.last(where: { $0["kind"] == .string("value") }), event["changes"] == .null
        else { return nil }
        return self.state.withLock { $0.started || $0.ended } ? nil : event["value"].normalized()
    }

    /// Before the first batch: lets the writes called before it arrived show their local
    /// events first (`Database.writesBeingMade`; converting a large value takes a while), for
    /// at most 1 s. Never under the view's lock. Runs where the connection handles the frame:
    /// for a small one, its event loop, whose other connections wait meanwhile (rare: only
    /// while a write of this instance is still converting its value).
    private func waitForWritesBeingMade() {
        let writes = self.database.writesInTheMaking
        guard !writes.isEmpty else { return }
        let deadline = ContinuousClock.now + .seconds(1)
        while !self.database.hasMade(writes), ContinuousClock.now < deadline { usleep(200) }
    }

    /// What this view shows at `path` (absolute), when it holds the whole location there (a
    /// plain location, a query evaluated here, or a child in the window of a query the server
    /// evaluates) and has the server's data; nil otherwise.
    func visibleValue(at path: Path) -> Value? {
        self.state.withLock { state in
            guard state.started, self.query.path.isAncestorOrSelf(of: path) else { return nil }
            if !state.local && !self.query.spec.isDefault {
                // A window of a query the server evaluates holds its children whole (Firebase's
                // complete children of a query view): a path in one of them is known, the rest not.
                guard path.depth > self.query.path.depth, case .object(let children) = state.cache,
                    children[path.keys[self.query.path.depth]] != nil
                else { return nil }
            }
            let pending = self.database.pendingWrites.touching(self.query.path).filter { self.shows($0, state) }
            let data = PendingWrites.overlay(state.cache, at: self.query.path, writes: pending)
            return data.child(at: Path(validatedKeys: Array(path.keys.dropFirst(self.query.path.depth))))
        }
    }

    /// The server's data at `path` (absolute) when this view holds the whole location there
    /// and has applied the log at least up to `logID` (nil: any); for `wholeServerData`.
    func serverData(at path: Path, asFarAs logID: String?) -> Value? {
        self.state.withLock { state in
            guard state.started, state.caughtUp, !state.ended, state.local || self.query.spec.isDefault,
                self.query.path.isAncestorOrSelf(of: path)
            else { return nil }
            if let logID { guard let own = state.lastLogID, own >= logID else { return nil } }
            return state.cache.child(at: Path(validatedKeys: Array(path.keys.dropFirst(self.query.path.depth))))
        }
    }

    /// Starts a view that has no server data yet from `value`, what other views hold for its
    /// query (made while not connected): its observers hear the children and the value now; the
    /// server's first batch, once connected, raises only what differs. The subscription is
    /// unchanged (it asks for the whole data, not a resume).
    func seed(_ value: Value) {
        self.state.withLock { state in
            guard !state.started, !state.ended else { return }
            state.cache = value
            state.cacheVersion &+= 1
            state.started = true
            self.show(&state, first: !state.valueShownFromWrites, cause: nil)
        }
    }

    /// Starts a view made while not connected from children other views of its location hold
    /// (`value`, the query already evaluated on them), as Firebase's clients answer a query
    /// never run online from the cache ("Querying Data Offline"): its observers hear those
    /// children now but no value, since the data may be incomplete; the server's first batch,
    /// once connected, raises what differs and the value.
    func seedPartially(_ value: Value) {
        self.state.withLock { state in
            guard !state.started, !state.ended else { return }
            state.cache = value
            state.cacheVersion &+= 1
            self.show(&state, first: false, cause: nil, partial: true)
        }
    }

    /// The children of the location this view holds whole from the server (its window's, or
    /// all of them when it evaluates its query here); nil before the server's data.
    var heldChildren: [String: Value]? {
        self.state.withLock { state in
            guard state.started else { return nil }
            return ChildOrder.children(of: state.cache)
        }
    }

    /// Applies writes the server makes without sending them here yet (this connection's
    /// onDisconnect writes, once it ended) to the copy, as if their events had come, and raises
    /// the events. A window of a query the server evaluates takes them too, the query then
    /// evaluated here on the result, as Firebase's clients do: what would enter it from beyond
    /// the window is not known until the server's data comes. The view then forgets its log
    /// id: it loads the server's data in full when it subscribes again, which replaces these.
    func showServerWrites(_ puts: [PendingWrite.Put], now: Double) {
        let location = self.query.path
        let relevant = puts.filter { location.overlaps($0.path) }
        guard !relevant.isEmpty else { return }
        self.state.withLock { state in
            guard state.started, !state.ended else { return }
            let writes = PendingWrite(id: 0, location: location, puts: relevant, timeMilliseconds: now, silenced: [])
            let written = PendingWrites.overlay(state.cache, at: location, writes: [writes]).normalized()
            let whole = state.local || self.query.spec.isDefault
            state.cache = whole ? written : LocalQuery.object(LocalQuery.window(written, self.query.spec))
            state.cacheVersion &+= 1
            state.lastLogID = nil
            self.show(&state, first: false, cause: nil)
        }
    }

    /// Whether the view's events have reached the log entry `logID` (or it has ended).
    func hasPassed(_ logID: String) -> Bool {
        self.state.withLock { state in state.ended || (state.lastLogID.map { $0 >= logID } ?? false) }
    }

    /// Whether the newest log entry this view's events reached is `logID` (none after it).
    func isAt(_ logID: String) -> Bool {
        self.state.withLock { state in !state.ended && state.lastLogID == logID }
    }

    /// What this view's value observers were last shown, once it has the server's data.
    var shownValueOnceStarted: Value? {
        self.state.withLock { state in state.started || state.valueShownFromWrites ? state.shownValue : nil }
    }

    /// Whether taking the answered `write` off this view can change what it shows: its server
    /// copy does not hold the write's values (a later change came from the server before the
    /// answer: another client's write of the same location, committed after this one), or
    /// other waiting writes lie under or over it. Otherwise the copy already shows the write.
    func showsOtherwiseWithout(_ write: PendingWrite) -> Bool {
        let location = self.query.path
        let others = self.database.pendingWrites.touching(location)
        return self.state.withLock { state in
            guard state.started, !state.ended else { return false }
            if others.contains(where: { $0.id != write.id && self.shows($0, state) }) { return true }
            return !self.copyHolds(write, state)
        }
    }

    /// Whether the server copy already holds every value `write` puts under this view's
    /// location (so taking the write off shows the same).
    private func copyHolds(_ write: PendingWrite, _ state: State) -> Bool {
        let location = self.query.path
        return !write.puts.contains { put in
            if location.isAncestorOrSelf(of: put.path) {
                let below = Path(validatedKeys: Array(put.path.keys.dropFirst(location.depth)))
                return state.cache.child(at: below) != put.value.normalized()
            }
            guard put.path.isAncestorOrSelf(of: location) else { return false }
            let below = Path(validatedKeys: Array(location.keys.dropFirst(put.path.depth)))
            return put.value.normalized().child(at: below) != state.cache
        }
    }

    /// Whether this view still shows `write` on top of its server copy.
    func needs(_ write: PendingWrite) -> Bool {
        self.state.withLock { state in self.shows(write, state) }
    }

    private func shows(_ write: PendingWrite, _ state: State) -> Bool {
        guard let logID = write.acknowledged else { return true }
        if let since = write.streamedSince {
            // Over HTTP: until the stream passes the write's entry. One still delivering older
            // entries is behind, and is waited for. One that delivered nothing for the grace
            // period after the answer will not, if the write changed nothing this view shows:
            // its copy holds the write's values. A copy that lacks them means the stream is
            // behind after all (its bytes wait to be read in a starved process): the write
            // stays shown, up to `streamedHoldMaxSeconds`, so no event takes it back and
            // raises it again.
            guard (state.lastLogID ?? "") < logID else { return false }
            let now = Date()
            let grace = PendingWrite.streamedGraceSeconds
            if now.timeIntervalSince(since) < grace || state.lastFrameAt.map({ now.timeIntervalSince($0) < grace }) == true { return true }
            return now.timeIntervalSince(since) < PendingWrite.streamedHoldMaxSeconds && state.started && !state.ended && !self.copyHolds(write, state)
        }
        return !state.caughtUp && (state.lastLogID ?? "") < logID
    }

    /// The client's waiting writes changed (one was made or answered): shows the data again
    /// and raises the events between what was shown and what is now. `cause` is the write
    /// just made, if any (its silenced observers update their copy without being called).
    /// Before the server's first batch, the view shows the writes alone and raises their
    /// child events (Firebase does the same from a partial cache), but no value event: value
    /// waits for the server's data, unless a waiting write replaced the location (or an
    /// ancestor) whole: its data is then known, and value is raised at once, as Firebase's
    /// cache is then complete there (e.g. `setValue` offline on a location never loaded).
    func refresh(cause: PendingWrite?) {
        self.state.withLock { state in
            guard !state.ended else { return }
            let partial = !state.started && !self.writesDetermine(state)
            let firstValue = !state.started && !partial && !state.valueShownFromWrites
            self.show(&state, first: firstValue, cause: cause, partial: partial)
            if firstValue { state.valueShownFromWrites = true }
        }
    }

    /// Whether a waiting write this view shows replaced its location or an ancestor whole.
    /// Only a write not answered yet counts, as Firebase's write tree holds only those: an
    /// answered one is the server's data, which this view has not loaded (offline, a later
    /// answered write may already have replaced it).
    private func writesDetermine(_ state: State) -> Bool {
        self.database.pendingWrites.touching(self.query.path).contains { write in
            write.acknowledged == nil && self.shows(write, state) && write.puts.contains { $0.path.isAncestorOrSelf(of: self.query.path) }
        }
    }

    /// Computes what observers see now and delivers the events from what they saw before.
    /// Runs under the lock, so the events of successive changes are queued in order.
    private func show(_ state: inout State, first: Bool, cause: PendingWrite?, partial: Bool = false) {
        if !first, !partial, self.showChanged(&state, keys: [], cacheVersion: state.cacheVersion, silenced: cause?.silenced ?? []) { return }
        let ref = self.query.ref
        let order = self.query.spec.effectiveOrder
        let (window, value, shownWrites) = self.visible(state)
        var events = LocalQuery.events(from: state.shownWindow, to: window, order: order).map { event in
            Event(
                kind: event.kind, snapshot: DataSnapshot(ref: ref.child(Path(validatedKeys: [event.key])), value: event.value, order: order),
                previous: event.previous)
        }
        if !partial, first || state.shownValue != value {
            events.append(Event(kind: .value, snapshot: DataSnapshot(ref: ref, value: value, order: order), previous: nil))
        }
        state.shownWindow = window
        state.shownHasPriorities = window.contains { !$0.value.priority.isNull }
        if !partial { state.shownValue = value }
        state.shownBasis = partial ? nil : self.basis(of: shownWrites, cacheVersion: state.cacheVersion, reusing: state.shownBasis)
        guard !events.isEmpty else { return }
        self.deliver(events, to: state.registrations, silenced: cause?.silenced ?? [], state: &state)
    }

    /// `show` for a plain location when only some children can differ from what was shown:
    /// `keys` (those a server batch touched) and the children of the waiting writes that came or
    /// went since the last show. Each is recomputed alone (its server data with the waiting
    /// writes that touch it on top) and found in the shown window by binary search, so a change
    /// costs O(children touched × (log children + writes waiting)), not a sort of every child
    /// (1,000 quick writes under a `childAdded` observer took over a minute that way). The same
    /// events as `show`. Returns false, having done nothing, when it cannot know what the last
    /// show was computed from (`shownBasis`: the copy changed since other than by this batch,
    /// `cacheVersion` being its version before the batch), for a query, or when a write that
    /// came or went replaces the location or an ancestor; `show` then recomputes it all.
    private func showChanged(_ state: inout State, keys: Set<String>, cacheVersion: UInt64, silenced: Set<ObjectIdentifier>) -> Bool {
        guard self.query.spec.isDefault, !state.local, let basis = state.shownBasis, basis.cacheVersion == cacheVersion else { return false }
        switch (state.cache, state.shownValue) {
        case (.object, .object), (.object, .null), (.null, .object), (.null, .null): break
        default: return false
        }
        // The shown window in key order (no child has a priority, none of the location's own
        // or primitive forms changed): priorities need the whole show.
        guard !state.shownHasPriorities, !keys.contains(Value.priorityKey), state.cache[Value.wrappedValueKey].isNull,
            state.shownValue[Value.wrappedValueKey].isNull
        else { return false }
        let location = self.query.path
        let pending = self.database.pendingWrites.touching(location).filter { self.shows($0, state) }
        var keys = keys
        var keysByWrite = basis.keys
        state.shownBasis = nil  // `keysByWrite` is changed in place below
        if !pending.lazy.map(\.id).elementsEqual(basis.writes) {
            // The writes shown keep their relative order (a write joins at the end, or in the
            // place of one that goes): one pass over both finds those that came and went.
            var next = 0
            func went(_ id: UInt64) -> Bool {
                guard let children = keysByWrite.removeValue(forKey: id) ?? nil else { return false }
                keys.formUnion(children)
                return true
            }
            for write in pending {
                if keysByWrite[write.id] == nil {
                    guard let children = Self.children(touchedBy: write, at: location) else { return false }
                    keysByWrite[write.id] = .some(children)
                    keys.formUnion(children)
                    continue
                }
                while next < basis.writes.count, basis.writes[next] != write.id {
                    guard went(basis.writes[next]) else { return false }
                    next += 1
                }
                next += 1
            }
            while next < basis.writes.count {
                guard went(basis.writes[next]) else { return false }
                next += 1
            }
        }
        let newBasis = ShownBasis(cacheVersion: state.cacheVersion, writes: pending.map(\.id), keys: keysByWrite)
        guard !keys.isEmpty else {
            state.shownBasis = newBasis
            return true
        }
        func index(of key: String) -> (found: Bool, at: Int) {
            var low = 0
            var high = state.shownWindow.count
            while low < high {
                let mid = (low + high) / 2
                let c = Key.compare(state.shownWindow[mid].key, key)
                if c == 0 { return (true, mid) }
                if c < 0 { low = mid + 1 } else { high = mid }
            }
            return (false, low)
        }
        let news = keys.sorted(by: { Key.compare($0, $1) < 0 }).map { key -> (key: String, value: Value) in
            let path = Path(validatedKeys: location.keys + [key])
            let writes = pending.filter { $0.location.overlaps(path) }
            let server = state.cache[key]
            return (key, writes.isEmpty ? server : PendingWrites.overlay(server, at: path, writes: writes))
        }
        if news.contains(where: { !$0.value.priority.isNull }) { return false }  // the window leaves key order
        var value = state.shownValue
        state.shownValue = .null  // so `value` is changed in place where nothing else holds it
        var removed: [(key: String, value: Value)] = []
        var added: [String] = []
        var changed: [String] = []
        for (key, new) in news {
            let (found, at) = index(of: key)
            switch (found, new.isNull) {
            case (true, true):
                removed.append(state.shownWindow.remove(at: at))
            case (false, false):
                state.shownWindow.insert((key, new), at: at)
                added.append(key)
            case (true, false) where state.shownWindow[at].value != new:
                state.shownWindow[at].value = new
                changed.append(key)
            default:
                continue
            }
            value.set(new, at: Path(validatedKeys: [key]))
        }
        state.shownValue = value
        state.shownBasis = newBasis
        guard !removed.isEmpty || !added.isEmpty || !changed.isEmpty else { return true }
        let ref = self.query.ref
        let order = self.query.spec.effectiveOrder
        func event(_ kind: DataEventType, _ key: String) -> Event {
            let (_, at) = index(of: key)
            return Event(
                kind: kind, snapshot: DataSnapshot(ref: ref.child(Path(validatedKeys: [key])), value: state.shownWindow[at].value, order: order),
                previous: at > 0 ? state.shownWindow[at - 1].key : nil)
        }
        var events = removed.map { entry in
            Event(kind: .childRemoved, snapshot: DataSnapshot(ref: ref.child(Path(validatedKeys: [entry.key])), value: entry.value, order: order), previous: nil)
        }
        events += added.map { event(.childAdded, $0) }
        events += changed.map { event(.childChanged, $0) }
        events.append(Event(kind: .value, snapshot: DataSnapshot(ref: ref, value: value, order: order), previous: nil))
        self.deliver(events, to: state.registrations, silenced: silenced, state: &state)
        return true
    }

    /// The children of `location` that `write` puts values in; nil when it puts one at the
    /// location or above (it can change every child).
    private static func children(touchedBy write: PendingWrite, at location: Path) -> Set<String>? {
        var children: Set<String> = []
        for put in write.puts where put.path.overlaps(location) {
            guard put.path.depth > location.depth else { return nil }
            children.insert(put.path.keys[location.depth])
        }
        return children
    }

    /// The basis of a show of `writes` on the copy of `cacheVersion`, taking the children of
    /// writes `previous` already knew from it.
    private func basis(of writes: [PendingWrite], cacheVersion: UInt64, reusing previous: ShownBasis?) -> ShownBasis {
        var keys: [UInt64: Set<String>?] = [:]
        for write in writes {
            keys[write.id] = previous?.keys[write.id] ?? .some(Self.children(touchedBy: write, at: self.query.path))
        }
        return ShownBasis(cacheVersion: cacheVersion, writes: writes.map(\.id), keys: keys)
    }

    /// The window and value observers see: the server's data with the client's waiting
    /// writes on top. Without waiting writes, the server's window as sent (a query the server
    /// evaluates) or the query applied to the copy (a plain location, or a query evaluated
    /// here); with them, the query applied to the overlaid data.
    private func visible(_ state: State) -> (window: [LocalQuery.Entry], value: Value, writes: [PendingWrite]) {
        let pending = self.database.pendingWrites.touching(self.query.path).filter { self.shows($0, state) }
        if pending.isEmpty {
            let window = self.serverWindow(state)
            return (window, self.query.spec.loadsAllData ? state.cache : LocalQuery.object(window), [])
        }
        var base = state.cache
        // Whether `base` holds every child of the location (the server's data of all of it).
        var baseIsWhole = state.started && (state.local || self.query.spec.isDefault)
        if !state.local, !self.query.spec.isDefault, state.started,
            let whole = self.database.wholeServerData(at: self.query.path, asFarAs: state.lastLogID, excluding: self)
        {
            // A window the server evaluates knows only its own children: while writes wait, it
            // is evaluated on the whole location another view holds, as Firebase's views share
            // a complete cache, so a child a waiting removal pulls in is known (FIRDatabaseQueryTests
            // testItemsPulledIntoLimitCorrectly).
            base = whole
            baseIsWhole = true
        }
        var data = PendingWrites.overlay(base, at: self.query.path, writes: pending)
        if !baseIsWhole { data = Self.withoutPartialChildren(data, base: base, writes: pending, at: self.query.path) }
        if self.query.spec.isDefault { return (LocalQuery.window(data, QuerySpec()), data, pending) }
        if self.query.spec.loadsAllData { return (LocalQuery.window(data, self.query.spec), data, pending) }
        let window = LocalQuery.window(data, self.query.spec)
        return (window, LocalQuery.object(window), pending)
    }

    /// `data` (`base` with `writes` on top) without the children neither `base` holds nor a
    /// write sets whole: a write below a child whose data is not loaded (an update of one of
    /// its fields, before the server's data came or outside a query's window) shows a part of
    /// it only. Firebase raises no event for such a child (its view cache holds complete
    /// children only; firebase-js-sdk "can properly handle unknown deep merges").
    static func withoutPartialChildren(_ data: Value, base: Value, writes: [PendingWrite], at location: Path) -> Value {
        guard case .object(var children) = data else { return data }
        for key in children.keys where base[key].isNull {
            let path = Path(validatedKeys: location.keys + [key])
            let setWhole = writes.contains { write in write.puts.contains { $0.path.isAncestorOrSelf(of: path) } }
            if !setWhole { children.removeValue(forKey: key) }
        }
        return children.isEmpty ? .null : .object(children)
    }

    /// The window of the server's copy: the whole copy for a query the server evaluates (it
    /// sends the window only), the query applied to the copy otherwise.
    private func serverWindow(_ state: State) -> [LocalQuery.Entry] {
        if state.local || self.query.spec.isDefault {
            return LocalQuery.window(state.cache, state.local ? self.query.spec : QuerySpec())
        }
        let children = ChildOrder.children(of: state.cache)
        return ChildOrder.sortedKeys(children, self.query.spec.effectiveOrder).map { ($0, children[$0]!) }
    }

    /// child_added for each child in order, then value: what a new observer hears first.
    private func initialEvents(_ state: State, withValue: Bool = true) -> [Event] {
        let ref = self.query.ref
        let order = self.query.spec.effectiveOrder
        let window = state.shownWindow
        var events: [Event] = []
        for (i, entry) in window.enumerated() {
            events.append(
                Event(
                    kind: .childAdded, snapshot: DataSnapshot(ref: ref.child(Path(validatedKeys: [entry.key])), value: entry.value, order: order),
                    previous: i > 0 ? window[i - 1].key : nil))
        }
        if withValue {
            events.append(Event(kind: .value, snapshot: DataSnapshot(ref: ref, value: state.shownValue, order: order), previous: nil))
        }
        return events
    }

    /// On the callback queue, in order: each event to each matching observer still there.
    /// Queues `events` for `registrations` on the callback queue. Called under the lock
    /// (`state`), so batches are queued, and numbered, in the order they were raised.
    private func deliver(_ events: [Event], to registrations: [Registration], silenced: Set<ObjectIdentifier> = [], state: inout State) {
        state.raised += 1
        let batch = state.raised
        // Held until delivered: a view ended by its last removal still delivers what it raised.
        self.database.deliver {
            for event in events {
                for registration in registrations where registration.eventType == event.kind {
                    guard self.isLive(registration.handle, batch: batch, once: registration.once) else { continue }
                    if registration.once { self.database.removeObserver(registration.handle) }
                    if let token = registration.token, silenced.contains(token), let silent = registration.silent {
                        silent.value(event.snapshot, event.previous)
                    } else {
                        registration.block.value(event.snapshot, event.previous)
                    }
                }
            }
        }
    }

    /// Whether `batch` reaches `handle`: not removed, or removed after the batch was raised
    /// (never for a `once` observer once removed: it heard its event).
    private func isLive(_ handle: DatabaseHandle, batch: UInt64, once: Bool) -> Bool {
        self.state.withLock { state in
            guard let removedAfter = state.removed[handle] else { return true }
            return !once && batch <= removedAfter
        }
    }

    // MARK: Wire helpers

    /// A JSON array arrives as an object keyed "0", "1", ...: its elements in order.
    static func list(_ value: Value) -> [Value] {
        guard case .object(let elements) = value else { return [] }
        return elements.compactMap { key, element in Int(key).map { ($0, element) } }.sorted { $0.0 < $1.0 }.map(\.1)
    }

    static func change(_ value: Value) -> ValueChange? {
        guard case .string(let op) = value["op"], case .string(let pathText) = value["path"],
            // `/.priority`: the location's own priority.
            let path = pathText == "/" + Value.priorityKey ? Path(validatedKeys: [Value.priorityKey]) : try? Path(allowingPriority: pathText)
        else { return nil }
        switch op {
        case "put": return .put(path: path, value: value["data"].normalized())
        case "patch":
            guard case .object(let children) = value["data"] else { return nil }
            // A null member removes that child; a member's value is a whole value.
            return .patch(path: path, children: children.mapValues { $0.normalized() })
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
