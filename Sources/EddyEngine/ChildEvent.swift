// What a listener receives: Firebase's child and value events, each tagged with the log id of
// the entry that caused it (nil for the events that describe the state at attach time).

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
    /// The child (its last value for child_removed), or for `value` the listener's value.
    public var value: Value
    /// The entry that caused the event; nil for the events sent at attach time.
    public var logID: LogID?

    public init(kind: Kind, key: String?, previousKey: String?, value: Value, logID: LogID?) {
        self.kind = kind
        self.key = key
        self.previousKey = previousKey
        self.value = value
        self.logID = logID
    }

    public var description: String {
        var text = self.kind.rawValue
        if let key { text += " \(key)" }
        if self.kind != .childRemoved, self.kind != .value { text += " (prev \(self.previousKey ?? "null"))" }
        return text + " " + JSONWriter.string(self.value)
    }
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
