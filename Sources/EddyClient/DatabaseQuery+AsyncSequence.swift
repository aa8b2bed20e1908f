// Observers as async sequences: `for try await snapshot in ref.events(.childAdded)`.
// Ending the loop (or cancelling its task) removes the observer and its server subscription.
// The buffer between the callback queue and the consumer is bounded: `values()` keeps only
// the newest value (a slow reader skips to the latest state), `events(_:)` holds at most
// `eventsBufferedMax` events and then ends with an error rather than drop one silently.

import Foundation

extension DatabaseQuery {
    /// Events a consumer may leave unread before `events(_:)` ends with an error.
    public static let eventsBufferedMax = 10_000

    /// Every event of `eventType` with the previous sibling's key, until the loop ends. A
    /// query the server refuses ends the sequence with that error.
    public func eventsWithPreviousSiblingKey(_ eventType: DataEventType) -> AsyncThrowingStream<(DataSnapshot, String?), any Error> {
        self.stream(of: eventType) { ($0, $1) }
    }

    /// Every event of `eventType`, until the loop ends.
    public func events(_ eventType: DataEventType) -> AsyncThrowingStream<DataSnapshot, any Error> {
        self.stream(of: eventType) { snapshot, _ in snapshot }
    }

    /// An observer feeding a stream of at most `eventsBufferedMax` unread elements.
    private func stream<Element: Sendable>(
        of eventType: DataEventType, _ element: @escaping @Sendable (DataSnapshot, String?) -> Element
    ) -> AsyncThrowingStream<Element, any Error> {
        AsyncThrowingStream(bufferingPolicy: .bufferingOldest(Self.eventsBufferedMax)) { continuation in
            let handle = self.observe(
                eventType,
                andPreviousSiblingKeyWith: { snapshot, previous in
                    if case .dropped = continuation.yield(element(snapshot, previous)) {
                        continuation.finish(
                            throwing: DatabaseError(
                                .unknownError, "the consumer of events(\(eventType)) fell more than \(Self.eventsBufferedMax) events behind"))
                    }
                }, withCancel: { error in continuation.finish(throwing: error) })
            let database = self.database
            continuation.onTermination = { _ in database.removeObserver(handle) }
        }
    }

    /// The value now, then after every change; a slow reader gets the newest.
    public func values() -> AsyncThrowingStream<DataSnapshot, any Error> {
        AsyncThrowingStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let handle = self.observe(
                .value, with: { snapshot in continuation.yield(snapshot) }, withCancel: { error in continuation.finish(throwing: error) })
            let database = self.database
            continuation.onTermination = { _ in database.removeObserver(handle) }
        }
    }
}
