// The order a snapshot lists its children in: the query's order (Firebase's value order,
// then key order for ties); without one, Firebase's default priority order (no priority
// first, then numbers, then strings, ties by key), which is key order where no child has a
// priority. Values are in export form (`Value+Priority.swift`): a `.priority` member is not
// a child, a `{".value": v, ".priority": p}` node has none, and orders by value or child look
// at the data without priorities.

import EddyModel

enum ChildOrder {
    static func sortValue(of child: Value, _ order: Query.Order) -> Value {
        switch order {
        case .key: return .null
        case .priority: return child.priority
        case .value: return child.withoutPriorities
        case .child(let path): return child.child(at: path).withoutPriorities
        }
    }

    /// The children of `value` (export form): none for a primitive, its members but
    /// `.priority` for an object.
    static func children(of value: Value) -> [String: Value] {
        guard case .object(var children) = value, children[Value.wrappedValueKey] == nil else { return [:] }
        children.removeValue(forKey: Value.priorityKey)
        return children
    }

    /// The keys of `children` (no `.priority` among them) in `order`.
    static func sortedKeys(_ children: [String: Value], _ order: Query.Order) -> [String] {
        if order == .key || (order == .priority && !children.values.contains { !$0.priority.isNull }) {
            return children.keys.sorted { Key.compare($0, $1) < 0 }
        }
        let entries = children.map { (key: $0.key, sort: self.sortValue(of: $0.value, order)) }
        return entries.sorted { ValueOrder.compare($0.sort, key: $0.key, $1.sort, key: $1.key) < 0 }.map(\.key)
    }
}
