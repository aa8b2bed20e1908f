// The order a snapshot lists its children in: the query's order (Firebase's value order,
// then key order for ties), key order without one. Eddy stores no priorities, so priority
// order is key order.

import EddyModel

enum ChildOrder {
    static func sortValue(of child: Value, _ order: Query.Order) -> Value {
        switch order {
        case .key, .priority: return .null
        case .value: return child
        case .child(let path): return child.child(at: path)
        }
    }

    /// The keys of `children` in `order`.
    static func sortedKeys(_ children: [String: Value], _ order: Query.Order) -> [String] {
        if order == .key || order == .priority {
            return children.keys.sorted { Key.compare($0, $1) < 0 }
        }
        let entries = children.map { (key: $0.key, sort: self.sortValue(of: $0.value, order)) }
        return entries.sorted { ValueOrder.compare($0.sort, key: $0.key, $1.sort, key: $1.key) < 0 }.map(\.key)
    }
}
