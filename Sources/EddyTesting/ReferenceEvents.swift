// The oracle for live events: what a listener must receive for one log entry, derived from
// the listener's whole result before and after it, the slow way (no incremental state).
// Firebase's rules (FIREBASE_REFERENCE.md §4, firebase-js-sdk EventGenerator):
// - per entry, child_removed, then child_added, child_moved, child_changed, then value;
// - removed children in the old result's order, the others in the new result's order;
// - child_moved for every changed child whose indexed value changed (the value at the order's
//   path, compared deeply; never for key order), always followed by its child_changed;
// - previousKey (added, moved, changed) = the key before the child in the new result, nil first;
// - value when the result changed: for a plain listener (no query) the location's whole value,
//   changed at any depth; for a query, the selected children.
// Change sets (Realm-style) follow the same comparison: a removed child or one whose indexed
// value changed is a deletion at its old index (and the latter an insertion at its new index),
// an added child an insertion, any other changed child a modification at its new index.

import EddyModel

public struct ListenerEvent: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case childRemoved = "child_removed"
        case childAdded = "child_added"
        case childMoved = "child_moved"
        case childChanged = "child_changed"
        case value
    }

    public var kind: Kind
    /// The child's key; nil for `value`.
    public var key: String?
    /// For added, moved and changed: the preceding key in the new result (nil when first).
    public var previousKey: String?
    /// The child (its old value for child_removed) or, for `value`, the listener's value.
    public var value: Value

    public init(kind: Kind, key: String?, previousKey: String?, value: Value) {
        self.kind = kind
        self.key = key
        self.previousKey = previousKey
        self.value = value
    }

    public var description: String {
        var text = self.kind.rawValue
        if let key { text += " \(key)" }
        if self.kind != .childRemoved, self.kind != .value { text += " (prev \(self.previousKey ?? "null"))" }
        return text + " " + JSONWriter.string(self.value)
    }
}

/// Index lists of a result change: deletions in the old result, insertions and modifications in
/// the new one, each ascending; applied in that order they turn the old result into the new.
public struct ResultChangeSet: Sendable, Equatable {
    public var deletions: [Int]
    public var insertions: [Int]
    public var modifications: [Int]

    public init(deletions: [Int], insertions: [Int], modifications: [Int]) {
        self.deletions = deletions
        self.insertions = insertions
        self.modifications = modifications
    }
}

extension ReferenceModel {
    /// A listener's result in `root`: the children its query selects (all, in key order, without
    /// a query), in query order.
    public static func listenerResult(_ root: Value, at location: Path, _ query: Query?) -> [(key: String, value: Value)] {
        guard case .object(let children) = root.child(at: location) else { return [] }
        let keys = self.select(children, query ?? Query(order: .key))
        return keys.map { ($0, children[$0]!) }
    }

    /// What a listener receives when it attaches: each child as child_added in order, then value.
    public static func initialEvents(_ root: Value, at location: Path, _ query: Query?) -> [ListenerEvent] {
        let result = self.listenerResult(root, at: location, query)
        var events: [ListenerEvent] = []
        for (i, child) in result.enumerated() {
            events.append(ListenerEvent(kind: .childAdded, key: child.key, previousKey: i == 0 ? nil : result[i - 1].key, value: child.value))
        }
        events.append(ListenerEvent(kind: .value, key: nil, previousKey: nil, value: self.listenerValue(root, at: location, query)))
        return events
    }

    /// The events one change of the database (`before` to `after`) fires for a listener.
    public static func events(before: Value, after: Value, at location: Path, _ query: Query?) -> [ListenerEvent] {
        let old = self.listenerResult(before, at: location, query)
        let new = self.listenerResult(after, at: location, query)
        let oldValues = Dictionary(uniqueKeysWithValues: old.map { ($0.key, $0.value) })
        let newValues = Dictionary(uniqueKeysWithValues: new.map { ($0.key, $0.value) })
        let order = (query ?? Query(order: .key)).order
        var events: [ListenerEvent] = []
        for child in old where newValues[child.key] == nil {
            events.append(ListenerEvent(kind: .childRemoved, key: child.key, previousKey: nil, value: child.value))
        }
        var moved: [ListenerEvent] = []
        var changed: [ListenerEvent] = []
        for (i, child) in new.enumerated() {
            let previous = i == 0 ? nil : new[i - 1].key
            guard let oldValue = oldValues[child.key] else {
                events.append(ListenerEvent(kind: .childAdded, key: child.key, previousKey: previous, value: child.value))
                continue
            }
            guard oldValue != child.value else { continue }
            if self.indexedValueChanged(oldValue, child.value, order) {
                moved.append(ListenerEvent(kind: .childMoved, key: child.key, previousKey: previous, value: child.value))
            }
            changed.append(ListenerEvent(kind: .childChanged, key: child.key, previousKey: previous, value: child.value))
        }
        events += moved + changed
        let oldValue = self.listenerValue(before, at: location, query)
        let newValue = self.listenerValue(after, at: location, query)
        if oldValue != newValue {
            events.append(ListenerEvent(kind: .value, key: nil, previousKey: nil, value: newValue))
        }
        return events
    }

    /// The change set of a query listener's result; nil when the result did not change.
    public static func changeSet(before: Value, after: Value, at location: Path, _ query: Query?) -> ResultChangeSet? {
        let old = self.listenerResult(before, at: location, query)
        let new = self.listenerResult(after, at: location, query)
        let order = (query ?? Query(order: .key)).order
        let newIndex = Dictionary(uniqueKeysWithValues: new.enumerated().map { ($0.element.key, $0.offset) })
        let oldByKey = Dictionary(uniqueKeysWithValues: old.map { ($0.key, $0.value) })
        var set = ResultChangeSet(deletions: [], insertions: [], modifications: [])
        for (i, child) in old.enumerated() {
            guard let j = newIndex[child.key] else {
                set.deletions.append(i)
                continue
            }
            if self.indexedValueChanged(child.value, new[j].value, order) { set.deletions.append(i) }
        }
        for (j, child) in new.enumerated() {
            guard let oldValue = oldByKey[child.key] else {
                set.insertions.append(j)
                continue
            }
            if self.indexedValueChanged(oldValue, child.value, order) {
                set.insertions.append(j)
            } else if oldValue != child.value {
                set.modifications.append(j)
            }
        }
        return set.deletions.isEmpty && set.insertions.isEmpty && set.modifications.isEmpty ? nil : set
    }

    /// The `value` a listener sees: the location's whole value without a query, else the
    /// selected children as an object (`.null` when none).
    static func listenerValue(_ root: Value, at location: Path, _ query: Query?) -> Value {
        guard let query else { return root.child(at: location) }
        let result = self.listenerResult(root, at: location, query)
        return result.isEmpty ? .null : .object(Dictionary(uniqueKeysWithValues: result.map { ($0.key, $0.value) }))
    }

    /// Firebase's `indexedValueChanged`: key order never; value order when the child changed;
    /// a child order when the value at its path changed (compared deeply).
    static func indexedValueChanged(_ old: Value, _ new: Value, _ order: Query.Order) -> Bool {
        switch order {
        case .key, .priority: return false
        case .value: return old != new
        case .child(let path): return old.child(at: path) != new.child(at: path)
        }
    }
}
