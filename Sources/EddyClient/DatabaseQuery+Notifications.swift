// NotificationCenter posting, for code that prefers notifications: each event of a query is
// posted as `Notification.Name.databaseEvent` with the query as the object and the event in
// `userInfo` (`DatabaseNotificationKey`), on the database's callback queue; a refusal is posted
// as `.databaseObserverCancelled` with the error.

import Foundation

extension Notification.Name {
    /// An event of an observed query (see `DatabaseQuery.postNotifications(for:to:)`).
    public static let databaseEvent = Notification.Name("EddyDatabaseEvent")
    /// The server refused or ended an observed query; `userInfo[.error]` says why.
    public static let databaseObserverCancelled = Notification.Name("EddyDatabaseObserverCancelled")
}

/// Keys of a database notification's `userInfo`.
public enum DatabaseNotificationKey {
    /// The `DataEventType`.
    public static let eventType = "eventType"
    /// The `DataSnapshot`.
    public static let snapshot = "snapshot"
    /// The previous sibling's key (absent for the first child and for `value`).
    public static let previousSiblingKey = "previousSiblingKey"
    /// The error of a `.databaseObserverCancelled` notification.
    public static let error = "error"
}

extension DatabaseQuery {
    /// Posts each event of `eventTypes` to `center`; returns the observer handles (remove
    /// them with `removeObserver(withHandle:)` to stop).
    @discardableResult
    public func postNotifications(for eventTypes: [DataEventType], to center: NotificationCenter = .default) -> [DatabaseHandle] {
        let centerBox = UncheckedSendable(center)
        return eventTypes.map { eventType in
            self.observe(
                eventType,
                andPreviousSiblingKeyWith: { [weak self] snapshot, previous in
                    guard let self else { return }
                    var info: [AnyHashable: Any] = [DatabaseNotificationKey.eventType: eventType, DatabaseNotificationKey.snapshot: snapshot]
                    if let previous { info[DatabaseNotificationKey.previousSiblingKey] = previous }
                    centerBox.value.post(name: .databaseEvent, object: self, userInfo: info)
                },
                withCancel: { [weak self] error in
                    centerBox.value.post(name: .databaseObserverCancelled, object: self, userInfo: [DatabaseNotificationKey.error: error])
                })
        }
    }
}
