// What defines a listener as the event router keeps it (`ListenerSpec`), where its events go
// (`ListenerOutput`), and the unit the router hands to the sync pipeline (`Delivery`).

import EddyModel

/// Hands one listener its events or change (a sink call with its payload). The committer's
/// sync pipeline runs it once the entry it describes is durable.
package typealias Delivery = @Sendable () -> Void

/// How a listener hears about changes.
package enum ListenerOutput: Sendable {
    case events(ChildEventSink)
    case changeSets(ResultChangeSink)

    package var isChangeSets: Bool {
        if case .changeSets = self { return true }
        return false
    }
}

/// Everything that defines a listener.
package struct ListenerSpec: Sendable {
    package var location: Path
    package var query: Query?
    package var keyPaths: [Path]?
    package var output: ListenerOutput
    /// Which events an `.events` output hears (change-set outputs ignore it).
    package var selection: EventSelection = .firebase
    /// Resume: instead of the attach batch, the events of every entry after this log id.
    package var since: LogID? = nil
    /// With `since`: false when the caller reads the entries after `since` up to `liveAfter`
    /// from the log itself; the listener then gets neither a replay nor an attach batch.
    package var replaysSince = true
    /// Whom the listener acts for: checked at attach and after every rules change.
    package var access: Access = .admin
    /// Its read rules depend on the data or the time (set by the committer): checked again
    /// each time it is about to hear a change.
    package var recheckRead = false
    /// An `.events` listener that takes the events of several log entries in one batch: the
    /// live entries of one commit group come as one batch, in log order, each event naming its
    /// entry, handed over at the end of the group (after the group's per-entry batches of other
    /// listeners). False: one batch per entry. A busy location's subscribers then cost one
    /// hand-over per group instead of one per entry.
    package var coalescesEntries = false
    /// Values in Firebase's export form (`.priority` members, `Value+Priority.swift`): the
    /// attach value, each child and each change; a priority-only change is heard as a change of
    /// `<node>/.priority`. A query's result holds its children's priorities, not the location's.
    package var exportsPriorities = false

    package init(
        location: Path, query: Query?, keyPaths: [Path]?, output: ListenerOutput, selection: EventSelection = .firebase,
        since: LogID? = nil, replaysSince: Bool = true, access: Access = .admin, coalescesEntries: Bool = false,
        exportsPriorities: Bool = false
    ) {
        self.coalescesEntries = coalescesEntries
        self.exportsPriorities = exportsPriorities
        self.location = location
        self.query = query
        self.keyPaths = keyPaths
        self.output = output
        self.selection = selection
        self.since = since
        self.replaysSince = replaysSince
        self.access = access
    }
}
