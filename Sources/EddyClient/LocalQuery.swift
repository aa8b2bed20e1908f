// A query evaluated on the client, as Firebase's clients do when the server has no index for
// it: the window of a location's children (order, bounds, limit), and the child events that
// take one window to the next. Eddy's server refuses an unindexed orderByChild/orderByValue
// (Firebase's REST answer); the client then reads or listens to the whole location and
// computes the query here, like Firebase's SDK (which logs a warning and does the same).
//
// Events between two windows come in Firebase's order: child_removed for children that
// left, child_added for those that entered (with the previous key in the new window),
// child_moved for those whose sort value changed (Firebase's rule, even when the position did not),
// child_changed for those whose data changed; then value.

import EddyModel

enum LocalQuery {
    typealias Entry = (key: String, value: Value)

    /// The children of `value` in the query's window, in its order.
    static func window(_ value: Value, _ spec: QuerySpec) -> [Entry] {
        let children = ChildOrder.children(of: value)
        guard !children.isEmpty else { return [] }
        let order = spec.effectiveOrder
        var entries = ChildOrder.sortedKeys(children, order).map { (key: $0, value: children[$0]!) }
        if let start = spec.start {
            entries = entries.filter { entry in
                let c = self.compare(entry, start, order)
                return start.inclusive ? c >= 0 : c > 0
            }
        }
        if let end = spec.end {
            entries = entries.filter { entry in
                let c = self.compare(entry, end, order)
                return end.inclusive ? c <= 0 : c < 0
            }
        }
        switch spec.limit {
        case .first(let n): entries = Array(entries.prefix(n))
        case .last(let n): entries = Array(entries.suffix(n))
        case nil: break
        }
        return entries
    }

    /// How an entry compares with a bound (negative: before it).
    private static func compare(_ entry: Entry, _ bound: QuerySpec.Bound, _ order: Query.Order) -> Int {
        if order == .key {
            guard case .string(let s) = bound.value else { return 0 }
            return Key.compare(entry.key, s)
        }
        let c = ValueOrder.compare(ChildOrder.sortValue(of: entry.value, order), bound.value)
        if c != 0 { return c }
        guard let key = bound.key else { return 0 }
        return Key.compare(entry.key, key)
    }

    struct Event {
        var kind: DataEventType
        var key: String
        var value: Value
        var previous: String?
    }

    /// The child events from window `old` to window `new`.
    static func events(from old: [Entry], to new: [Entry], order: Query.Order) -> [Event] {
        var oldIndex: [String: Int] = [:]
        for (i, entry) in old.enumerated() { oldIndex[entry.key] = i }
        var newIndex: [String: Int] = [:]
        for (i, entry) in new.enumerated() { newIndex[entry.key] = i }
        func previous(in window: [Entry], at index: Int) -> String? { index > 0 ? window[index - 1].key : nil }
        var events: [Event] = []
        for entry in old where newIndex[entry.key] == nil {
            events.append(Event(kind: .childRemoved, key: entry.key, value: entry.value, previous: nil))
        }
        for (i, entry) in new.enumerated() where oldIndex[entry.key] == nil {
            events.append(Event(kind: .childAdded, key: entry.key, value: entry.value, previous: previous(in: new, at: i)))
        }
        for (i, entry) in new.enumerated() {
            guard let j = oldIndex[entry.key] else { continue }
            let before = old[j].value
            // Firebase raises child_moved whenever the value a child is sorted by changed
            // (EventGenerator: indexedValueChanged), whether or not its neighbours did.
            if ChildOrder.sortValue(of: before, order) != ChildOrder.sortValue(of: entry.value, order) {
                events.append(Event(kind: .childMoved, key: entry.key, value: entry.value, previous: previous(in: new, at: i)))
            }
        }
        for (i, entry) in new.enumerated() {
            guard let j = oldIndex[entry.key], old[j].value != entry.value else { continue }
            events.append(Event(kind: .childChanged, key: entry.key, value: entry.value, previous: previous(in: new, at: i)))
        }
        return events
    }

    static func object(_ window: [Entry]) -> Value {
        window.isEmpty ? .null : .object(Dictionary(uniqueKeysWithValues: window.map { ($0.key, $0.value) }))
    }

    /// The server cannot evaluate the query: no `.indexOn` declares its index ("Index not
    /// defined"), or the index is declared and still building. Either way the client evaluates
    /// it itself, as Firebase's SDK does without an index (Firebase's own indexes are never
    /// unavailable, so its clients never see the second).
    static func isMissingIndex(_ error: DatabaseError) -> Bool {
        error.message.hasPrefix("Index not defined") || (error.message.contains("the index ") && error.message.contains("is still building"))
    }
}
