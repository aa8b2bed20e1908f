// The oracle for ordered queries: what `Engine.query` must answer, computed the slow, obviously
// correct way. Take every child of the location, compute its sort value, sort all of them by
// (Firebase value order, then key order), keep those inside the bounds, apply the limit. No
// seeking, no encodings, no index: if this disagrees with the engine, the engine is wrong (or
// this file has a bug simple enough to see by reading it).

import EddyModel

extension ReferenceModel {
    /// The children of `path` that `query` selects, as an object (`.null` when none). A
    /// primitive or missing location has no children and selects nothing.
    public func query(_ path: Path, _ query: Query) -> Value {
        guard case .object(let children) = self.get(path) else { return .null }
        let selected = ReferenceModel.select(children, query)
        var out: [String: Value] = [:]
        for key in selected { out[key] = children[key] }
        return out.isEmpty ? .null : .object(out)
    }

    /// The keys `query` selects among `children`, in query order (sort value, then key).
    public static func select(_ children: [String: Value], _ query: Query) -> [String] {
        var entries: [(key: String, sort: Value)] = children.map { ($0.key, sortValue(of: $0.value, query.order)) }
        entries.sort { a, b in
            let c = ValueOrder.compare(a.sort, b.sort)
            return c != 0 ? c < 0 : Key.compare(a.key, b.key) < 0
        }
        entries = entries.filter { entry in
            if let start = query.start, !isAtOrAfter(entry, start, query.order) { return false }
            if let end = query.end, !isAtOrBefore(entry, end, query.order) { return false }
            return true
        }
        switch query.limit {
        case .first(let n): entries = Array(entries.prefix(n))
        case .last(let n): entries = Array(entries.suffix(n))
        case nil: break
        }
        return entries.map(\.key)
    }

    /// What a child is sorted by. The oracle's data holds no priorities, so under `.priority`
    /// every child's priority is null and only keys order them.
    public static func sortValue(of child: Value, _ order: Query.Order) -> Value {
        switch order {
        case .key, .priority: return .null
        case .value: return child
        case .child(let path): return child.child(at: path)
        }
    }

    /// How an entry compares with a bound: negative when the entry is before it. Key order
    /// compares keys with the bound string; other orders compare sort values and, only when
    /// they are equal and the bound names a key, keys. A bound key may be any string: Firebase's
    /// sentinels "[MIN_NAME]" and "[MAX_NAME]" (what the JS SDK sends for startAfter/endBefore
    /// without a key) sort before and after every key; any other string compares as a key.
    static func compare(_ entry: (key: String, sort: Value), _ bound: Query.Bound, _ order: Query.Order) -> Int {
        if order == .key {
            guard case .string(let s) = bound.value else {
                preconditionFailure("a key-order bound must be a string, got \(bound.value)")
            }
            return Key.compare(entry.key, s)
        }
        let c = ValueOrder.compare(entry.sort, bound.value)
        if c != 0 { return c }
        switch bound.key {
        case nil: return 0
        case "[MIN_NAME]": return 1
        case "[MAX_NAME]": return -1
        case let key?: return Key.compare(entry.key, key)
        }
    }

    static func isAtOrAfter(_ entry: (key: String, sort: Value), _ start: Query.Bound, _ order: Query.Order) -> Bool {
        let c = compare(entry, start, order)
        return start.inclusive ? c >= 0 : c > 0
    }

    static func isAtOrBefore(_ entry: (key: String, sort: Value), _ end: Query.Bound, _ order: Query.Order) -> Bool {
        let c = compare(entry, end, order)
        return end.inclusive ? c <= 0 : c < 0
    }
}
