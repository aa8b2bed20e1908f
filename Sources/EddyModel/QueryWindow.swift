// A query's window over children held in memory: sort by (sort value, key), keep what lies
// between the bounds, apply the limit. For reads that have every child's sort value at hand
// anyway (priority order over stored priorities, `format=export` queries); indexed and
// key-ordered reads seek their windows in storage instead.

public enum QueryWindow {
    /// The keys `query` selects among `entries` (each child's key and its sort value under the
    /// query's order), in query order. Bound keys may be Firebase's sentinels "[MIN_NAME]" and
    /// "[MAX_NAME]" (before and after every key).
    public static func select(_ entries: [(key: String, sort: Value)], _ query: Query) -> [String] {
        let sorted = entries.sorted { ValueOrder.compare($0.sort, key: $0.key, $1.sort, key: $1.key) < 0 }
        // Entries inside the window form one run of the sorted list.
        var lower = 0
        if let start = query.start {
            while lower < sorted.count, !Self.isAtOrAfter(sorted[lower], start, query.order) { lower += 1 }
        }
        var upper = sorted.count
        if let end = query.end {
            while upper > lower, !Self.isAtOrBefore(sorted[upper - 1], end, query.order) { upper -= 1 }
        }
        var window = sorted[lower..<upper]
        switch query.limit {
        case .first(let n): window = window.prefix(n)
        case .last(let n): window = window.suffix(n)
        case nil: break
        }
        return window.map(\.key)
    }

    /// Negative when the entry sorts before the bound. Key order compares keys with the bound
    /// string; other orders compare sort values, then (only when the bound names a key) keys.
    private static func position(_ entry: (key: String, sort: Value), _ bound: Query.Bound, _ order: Query.Order) -> Int {
        if order == .key {
            guard case .string(let s) = bound.value else { return 1 }  // built queries bound keys by strings
            return Key.compare(entry.key, s)
        }
        let byValue = ValueOrder.compare(entry.sort, bound.value)
        guard byValue == 0 else { return byValue }
        switch bound.key {
        case nil: return 0
        case "[MIN_NAME]": return 1
        case "[MAX_NAME]": return -1
        case let key?: return Key.compare(entry.key, key)
        }
    }

    private static func isAtOrAfter(_ entry: (key: String, sort: Value), _ start: Query.Bound, _ order: Query.Order) -> Bool {
        let c = self.position(entry, start, order)
        return start.inclusive ? c >= 0 : c > 0
    }

    private static func isAtOrBefore(_ entry: (key: String, sort: Value), _ end: Query.Bound, _ order: Query.Order) -> Bool {
        let c = self.position(entry, end, order)
        return end.inclusive ? c <= 0 : c < 0
    }

    /// A child's sort value under `order`, from its value in export form: its priority, its
    /// plain value, or the plain value of its child at a path (key order sorts by key alone).
    public static func sortValue(of child: Value, _ order: Query.Order) -> Value {
        switch order {
        case .key: return .null
        case .priority: return child.priority
        case .value: return child.withoutPriorities
        case .child(let path): return child.withoutPriorities.child(at: path)
        }
    }
}
