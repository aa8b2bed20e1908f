// What a listener receives: Firebase's child and value events, each tagged with the log id of
// the entry that caused it (nil for the events that describe the state at attach time). A
// listener chooses which (`EventSelection`): child events, and `value` events that carry either
// the whole value (Firebase's snapshots, for in-process listeners) or only what changed (for
// listeners across a wire, whose clients keep the value: SSE streams and native subscriptions).

import EddyModel

public struct ChildEvent: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case childRemoved = "child_removed"
        case childAdded = "child_added"
        case childMoved = "child_moved"
        case childChanged = "child_changed"
        case value
        /// The listen ended (e.g. the index its query needs was dropped); `value` says why.
        /// Nothing follows it.
        case cancel
    }

    public var kind: Kind
    /// The child's key; nil for `value`.
    public var key: String?
    /// For added, moved and changed: the key before the child in the new result (nil when first).
    public var previousKey: String?
    /// The child (its last value for child_removed), or for `value` the listener's value
    /// (`.null` when `changes` carries the change instead).
    public var value: Value
    /// The entry that caused the event; nil for the events sent at attach time.
    public var logID: LogID?
    /// For a `value` event of a listener that hears changes (`EventSelection.valueChanges`):
    /// what the entry changed, relative to the location, to apply to the value the listener
    /// has. Nil when `value` is the whole value (always so at attach).
    public var changes: [ValueChange]?

    public init(kind: Kind, key: String?, previousKey: String?, value: Value, logID: LogID?, changes: [ValueChange]? = nil) {
        self.kind = kind
        self.key = key
        self.previousKey = previousKey
        self.value = value
        self.logID = logID
        self.changes = changes
    }

    /// Bytes the event holds, roughly (for buffer budgets).
    public var approximateBytes: Int {
        64 + self.value.approximateBytes + (self.changes?.reduce(0) { $0 + $1.approximateBytes } ?? 0)
    }

    public var description: String {
        var text = self.kind.rawValue
        if let key { text += " \(key)" }
        if self.kind != .childRemoved, self.kind != .value { text += " (prev \(self.previousKey ?? "null"))" }
        if let changes { return text + " changes \(changes)" }
        return text + " " + JSONWriter.string(self.value)
    }
}

/// Which events a listener hears.
public struct EventSelection: Sendable, Hashable {
    /// child_added, child_changed, child_moved and child_removed, each with the whole child.
    public var childEvents: Bool
    /// `value` events carry the change (`ChildEvent.changes`) instead of the whole value, except
    /// at attach. A plain listener (no query) that hears only these costs the size of each
    /// change, not of its location: the engine keeps no copy of the location for it.
    public var valueChanges: Bool

    public init(childEvents: Bool, valueChanges: Bool) {
        self.childEvents = childEvents
        self.valueChanges = valueChanges
    }

    /// Firebase's events: child events and `value` with the whole value.
    public static let firebase = EventSelection(childEvents: true, valueChanges: false)
    /// Child events, and `value` events that carry the change.
    public static let childEventsAndValueChanges = EventSelection(childEvents: true, valueChanges: true)
    /// Only `value` events that carry the change: what a Firebase REST stream sends.
    public static let valueChangesOnly = EventSelection(childEvents: false, valueChanges: true)
}

/// Identifies one listener of an engine.
public struct ListenerID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public var description: String { "listener \(self.rawValue)" }
}

/// Receives a listener's events, one call per batch (the attach batch, then one per log entry
/// that changed its result), in log order, after the entry is durable. Called on an engine
/// thread: it must not block (hand the events to a bounded buffer).
public typealias ChildEventSink = @Sendable (_ events: [ChildEvent]) -> Void

/// A Realm-style change of a query's result: `initial` once, then one `update` per log entry
/// that changed it. Index lists are ascending; deletions index the previous result, insertions
/// and modifications this one, and applying them in that order turns the previous result into
/// this one. A child whose sort value changed is a deletion and an insertion.
public struct ResultChange: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case initial
        case update
        /// The listen ended (e.g. its index was dropped); nothing follows.
        case cancelled
    }

    public struct Child: Sendable, Equatable {
        public var key: String
        public var value: Value
    }

    public var kind: Kind
    /// The whole result after the change, in query order.
    public var results: [Child]
    public var deletions: [Int]
    public var insertions: [Int]
    public var modifications: [Int]
    /// The entry that caused the update; nil for `initial`.
    public var logID: LogID?
}

/// Receives a change-set listener's changes (same threading rules as `ChildEventSink`).
public typealias ResultChangeSink = @Sendable (_ change: ResultChange) -> Void
