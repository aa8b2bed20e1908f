// Priority order without priorities. Eddy stores none, so every child's priority is null, and
// Firebase's priority order (null first, then numbers, then strings; ties by key) is key order
// with every child tied at null. A `$priority` query (Firebase's default order once a query
// has bounds: `queryStarting(atValue: nil, childKey: "c")`) therefore selects exactly what a
// key query does, or nothing: a non-null start is after every child, a non-null end after
// every child too, and a null bound narrows by its key (none: all of the nulls).

extension Query {
    /// The key query selecting what this `.priority` query selects when every priority is
    /// null, with its limit; nil when no child can be in its bounds.
    public var keyQueryForNullPriorities: Query? {
        var keyQuery = Query(order: .key, limit: self.limit)
        if let start = self.start {
            guard case .null = start.value else { return nil }  // null sorts before any priority
            switch start.key {
            case nil: if !start.inclusive { return nil }  // startAfter(null): after every null
            case "[MIN_NAME]": break
            case "[MAX_NAME]": return nil
            case let key?: keyQuery.start = Bound(value: .string(key), inclusive: start.inclusive)
            }
        }
        if let end = self.end {
            if case .null = end.value {
                switch end.key {
                case nil: if !end.inclusive { return nil }  // endBefore(null): before every null
                case "[MIN_NAME]": return nil
                case "[MAX_NAME]": break
                case let key?: keyQuery.end = Bound(value: .string(key), inclusive: end.inclusive)
                }
            }
            // A non-null end is after every (null) child: no bound.
        }
        return keyQuery
    }
}
