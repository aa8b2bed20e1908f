// Live events (Firebase listeners) on the engine: attach a listener to a location, with an
// optional query, and receive child_added/changed/moved/removed and value events, as described
// in `EventRouter` and `ListenerWindow`.
//
// Attaching is ordered with writes: the listener's first batch describes the state after log
// entry `liveAfter`, and it then receives the events of every later entry, each batch tagged
// with its log id, in log order, after the entry is durable. Nothing is missed in between.

import EddyModel

/// The answer to `Engine.listen`.
public struct ListenerAttachment: Sendable {
    public var id: ListenerID
    /// The newest log entry the first batch (child_added..., value) reflects; later entries
    /// arrive as events. Nil when the database had no entries yet.
    public var liveAfter: LogID?
}

extension Engine {
    /// Attaches a listener. Value and child orders need a ready index (as queries do).
    /// `sink` receives the attach batch, then one batch per log entry that changed the result.
    public func listen(
        _ location: Path, query: Query? = nil, sink: @escaping ChildEventSink
    ) async throws(EddyError) -> ListenerAttachment {
        if query?.order == .priority {
            throw EddyError(.unsupported, "orderBy \"$priority\": priorities are not supported yet")
        }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<ListenerAttachment, EddyError>, Never>) in
            let request = ControlRequest.listen(location, query, sink, continuation)
            if let refused = self.queue.enqueueControl(request) { request.refuse(refused) }
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
}
