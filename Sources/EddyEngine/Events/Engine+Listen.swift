// Folder Events/: the engine's wiring of EddyEvents: the public listen API here, the committer's
// attach/remove/rules-change control requests (Committer+Events). The event logic itself is the
// EddyEvents target.
//
// Live events (Firebase listeners) on the engine: attach a listener to a location, with an
// optional query, and receive child_added/changed/moved/removed and value events, as described
// in `EventRouter` and `ListenerWindow`.
//
// Attaching is ordered with writes: the listener's first batch describes the state after log
// entry `liveAfter`, and it then receives the events of every later entry, each batch tagged
// with its log id, in log order, after the entry is durable. Nothing is missed in between.

import EddyEvents
import EddyModel

/// The answer to `Engine.listen`.
public struct ListenerAttachment: Sendable {
    public var id: ListenerID
    /// The newest log entry the first batch (child_added..., value) reflects; later entries
    /// arrive as events. Nil when the database had no entries yet.
    public var liveAfter: LogID?
}

extension Engine {
    /// Attaches a listener that receives Firebase child and value events. Value and child orders
    /// need a ready index (as queries do). `keyPaths`: only changes at these paths inside a
    /// child notify it (children entering, leaving or moving always do). `sink` receives the
    /// attach batch, then one batch per log entry that changed what it listens to.
    ///
    /// `since`: resume a listen that had heard everything up to that log id: instead of the attach
    /// batch it receives the events of every entry after `since` (one batch per entry, derived
    /// from the state at `since`, rebuilt with the log's before-images), then the live events.
    /// Throws `invalidArgument` when `since` is newer than every entry, `notFound` when the log
    /// no longer holds the entries after it.
    ///
    /// `selection`: which events it hears (`EventSelection`); with `valueChanges`, a `value`
    /// event carries only what its entry changed (and at attach the whole value), and key paths
    /// do not hold it back: a listener that keeps the value hears every change.
    ///
    /// `replaySince: false` (with `since`): the listener receives only the entries after
    /// `liveAfter`; the caller replays those after `since` up to `liveAfter` itself, page by page
    /// (`logEntries(after:limit:)`, `LogEntry.valueChanges(at:)`), so a long replay never sits
    /// in memory or in the listener's buffer at once. `since` is still checked.
    ///
    /// `access`: whom the listener acts for. Unless it is the admin, the rules must allow reading
    /// the whole location (with the query's parameters) at attach (else `permissionDenied`), and
    /// again after every rules change (else the sink gets a `cancel` event, "Permission denied").
    ///
    /// `coalescesEntries`: the live entries of one commit group come in one batch, the events of
    /// each entry in log order, each naming its entry's log id, handed over at the end of the
    /// group (the attach batch and a resume's replay stay one per entry). A location written
    /// faster than the disk syncs then costs one batch per group and listener, not per entry.
    ///
    /// `exportsPriorities`: values in Firebase's export form (`.priority` members): the attach
    /// value, children and changes, a priority-only write heard as a change of
    /// `<node>/.priority`. Only for `.valueChangesOnly`, whose changes carry the location's own
    /// priority too (a query's result holds its children's, not the location's).
    ///
    /// `order`: a place taken earlier (`reserveListenOrder`); the listen attaches before every
    /// write that reached the engine after it (unless the reservation expired meanwhile).
    public func listen(
        _ location: Path, query: Query? = nil, keyPaths: [Path]? = nil, since: LogID? = nil, replaySince: Bool = true,
        selection: EventSelection = .firebase, access: Access = .admin, coalescesEntries: Bool = false,
        exportsPriorities: Bool = false, order: ListenOrder? = nil, sink: @escaping ChildEventSink
    ) async throws(EddyError) -> ListenerAttachment {
        defer { order?.cancel() }
        if exportsPriorities, selection != .valueChangesOnly {
            throw EddyError(.invalidArgument, "a listener in export form (priorities) hears value changes only")
        }
        return try await self.attach(
            ListenerSpec(
                location: location, query: query, keyPaths: keyPaths, output: .events(sink), selection: selection, since: since,
                replaysSince: replaySince, access: access, coalescesEntries: coalescesEntries, exportsPriorities: exportsPriorities),
            order: order)
    }

    /// Attaches a listener that receives Realm-style change sets of its result: `initial`,
    /// then an `update` per log entry that changed it.
    public func listenForChanges(
        _ location: Path, query: Query? = nil, keyPaths: [Path]? = nil, since: LogID? = nil, access: Access = .admin,
        sink: @escaping ResultChangeSink
    ) async throws(EddyError) -> ListenerAttachment {
        try await self.attach(
            ListenerSpec(location: location, query: query, keyPaths: keyPaths, output: .changeSets(sink), since: since, access: access))
    }

    private func attach(_ spec: ListenerSpec, order: ListenOrder? = nil) async throws(EddyError) -> ListenerAttachment {
        // A query whose index is still building waits for it, as a read does (at most
        // `Limits.indexWaitSecondsMax`), instead of being refused at once.
        if let query = spec.query, query.order != .key, query.order != .priority {
            _ = try await self.indexWaitingForBuild(spec.location, query)
        }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<ListenerAttachment, EddyError>, Never>) in
            let request = ControlRequest.listen(spec, continuation)
            if let refused = self.queue.enqueueControl(request, reservation: order?.ticket) { request.refuse(refused) }
        }
        return try result.get()
    }

    /// Removes one listener: no events of entries committed after this returns reach it.
    /// Returns false when no such listener was attached.
    @discardableResult
    public func removeListener(_ id: ListenerID) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let request = ControlRequest.unlisten(id, continuation)
            if let refused = self.queue.enqueueControl(request) { request.refuse(refused) }
        }
    }

    /// Removes every listener at exactly `location`; listeners on its children stay. Returns
    /// false when there were none.
    @discardableResult
    public func removeListeners(at location: Path) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let request = ControlRequest.unlistenAll(location, continuation)
            if let refused = self.queue.enqueueControl(request) { request.refuse(refused) }
        }
    }
}
