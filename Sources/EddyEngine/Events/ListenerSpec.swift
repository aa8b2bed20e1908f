// What defines a listener as the event router keeps it (`ListenerSpec`), where its events go
// (`ListenerOutput`), and the unit the router hands to the sync pipeline (`Delivery`).

import EddyModel

/// Hands one listener its events or change (a sink call with its payload). The committer's
/// sync pipeline runs it once the entry it describes is durable.
typealias Delivery = @Sendable () -> Void

/// How a listener hears about changes.
enum ListenerOutput: Sendable {
    case events(ChildEventSink)
    case changeSets(ResultChangeSink)

    var isChangeSets: Bool {
        if case .changeSets = self { return true }
        return false
    }
}

/// Everything that defines a listener.
struct ListenerSpec: Sendable {
    var location: Path
    var query: Query?
    var keyPaths: [Path]?
    var output: ListenerOutput
    /// Which events an `.events` output hears (change-set outputs ignore it).
    var selection: EventSelection = .firebase
    /// Resume: instead of the attach batch, the events of every entry after this log id.
    var since: LogID? = nil
    /// With `since`: false when the caller reads the entries after `since` up to `liveAfter`
    /// from the log itself; the listener then gets neither a replay nor an attach batch.
    var replaysSince = true
    /// Whom the listener acts for: checked at attach and after every rules change.
    var access: Access = .admin
}
