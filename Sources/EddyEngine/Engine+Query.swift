// Ordered queries. Key order needs no index: children of a location are a contiguous,
// key-ordered range of the tree, so a query seeks to its window and reads exactly the children
// in it (forward, or backward for limitToLast), skipping nothing it did not need.
// Value and child orders need a declared `.indexOn`; until indexes exist every such query is
// refused with Firebase's "Index not defined" text, which is what Firebase's REST API answers
// for an unindexed query.

import EddyModel
import EddyStorage

extension Engine {
    /// The children of `path` that `query` selects, as an object (`.null` when none). A query on
    /// a primitive selects nothing.
    public func query(_ path: Path, _ query: Query) async throws(EddyError) -> Value {
        try Self.checkIndexed(path, query)
        return try await self.onReader { () throws(EddyError) in try self.readQuery(path, query) }
    }

    /// Blocking variant of `query`.
    public func readQuery(_ path: Path, _ query: Query) throws(EddyError) -> Value {
        try Self.checkIndexed(path, query)
        let iterator = self.database.makeIterator(self.database.columnFamily(ColumnFamilies.tree))
        return try KeyQueryReader(iterator: iterator, location: PathKeyEncoding.encode(path), query: query).read()
    }

    static func checkIndexed(_ path: Path, _ query: Query) throws(EddyError) {
        switch query.order {
        case .key:
            return
        case .priority:
            throw EddyError(.unsupported, "orderBy \"$priority\": priorities are not supported yet")
        case .value, .child:
            throw EddyError(
                .invalidArgument,
                "Index not defined, add \".indexOn\": \"\(query.indexOnName ?? "")\", for path \"\(path)\", to the rules")
        }
    }
}

/// Reads the window of a key-ordered query from the tree.
struct KeyQueryReader {
    let iterator: Iterator
    let location: [UInt8]
    let query: Query

    private func segment(_ bound: Query.Bound?) -> [UInt8]? {
        guard let bound, case .string(let key) = bound.value else { return nil }
        var out: [UInt8] = []
        PathKeyEncoding.appendSegment(key, to: &out)
        return out
    }

    func read() throws(EddyError) -> Value {
        let start = self.segment(self.query.start)
        let end = self.segment(self.query.end)
        let startInclusive = self.query.start?.inclusive ?? true
        let endInclusive = self.query.end?.inclusive ?? true
        if let start, let end {
            let order = compare(start[...], end[...])
            if order > 0 || (order == 0 && !(startInclusive && endInclusive)) { return .null }
        }
        var children: [String: Value] = [:]
        switch self.query.limit {
        case .last(let count):
            try self.readBackward(start: start, startInclusive: startInclusive, end: end, endInclusive: endInclusive,
                                  count: count, into: &children)
        case .first(let count):
            try self.readForward(start: start, startInclusive: startInclusive, end: end, endInclusive: endInclusive,
                                 count: count, into: &children)
        case nil:
            try self.readForward(start: start, startInclusive: startInclusive, end: end, endInclusive: endInclusive,
                                 count: Int.max, into: &children)
        }
        return children.isEmpty ? .null : .object(children)
    }

    /// The child segment at the iterator (nil at the location's own primitive), and its key.
    private func currentChild() throws(EddyError) -> (segment: ArraySlice<UInt8>, prefix: [UInt8], key: String)? {
        let key = self.iterator.key
        guard key.count > self.location.count else { return nil }
        var rest = key[self.location.count...]
        let before = rest.count
        let child = try PathKeyEncoding.decodeSegment(&rest)
        let end = self.location.count + (before - rest.count)
        return (key[self.location.count..<end], Array(key[..<end]), child)
    }

    private func readForward(
        start: [UInt8]?, startInclusive: Bool, end: [UInt8]?, endInclusive: Bool, count: Int,
        into children: inout [String: Value]
    ) throws(EddyError) {
        if let start {
            self.iterator.seek(self.location + start + (startInclusive ? [] : [0xFF]))
        } else {
            self.iterator.seek(self.location)
        }
        while children.count < count, self.iterator.isValid, self.iterator.keyHasPrefix(self.location) {
            guard let child = try self.currentChild() else {
                self.iterator.next()  // a primitive at the location has no children
                continue
            }
            if let end {
                let order = compare(child.segment, end[...])
                if order > 0 || (order == 0 && !endInclusive) { break }
            }
            // Reading the subtree leaves the iterator on the next child.
            children[child.key] = try TreeReader.readSubtree(self.iterator, prefix: child.prefix).value
        }
        try TreeReader.check(self.iterator)
    }

    private func readBackward(
        start: [UInt8]?, startInclusive: Bool, end: [UInt8]?, endInclusive: Bool, count: Int,
        into children: inout [String: Value]
    ) throws(EddyError) {
        // Position on the last leaf at or before the end of the window.
        let upper: [UInt8]
        if let end {
            upper = self.location + end + (endInclusive ? [0xFF] : [])
        } else {
            upper = self.location + [0xFF]
        }
        self.iterator.seekForPrev(upper)
        if !endInclusive, self.iterator.isValid, self.iterator.key == upper { self.iterator.previous() }
        while children.count < count, self.iterator.isValid, self.iterator.keyHasPrefix(self.location) {
            guard let child = try self.currentChild() else { break }  // the location's own primitive
            if let start {
                let order = compare(child.segment, start[...])
                if order < 0 || (order == 0 && !startInclusive) { break }
            }
            children[child.key] = try TreeReader.readSubtree(self.iterator, prefix: child.prefix).value
            // Step before this child's first record.
            self.iterator.seekForPrev(child.prefix)
            if self.iterator.isValid, self.iterator.key == child.prefix { self.iterator.previous() }
        }
        try TreeReader.check(self.iterator)
    }
}

/// Bytewise comparison; encoded segments are self-delimiting, so this is key order.
private func compare(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Int {
    for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
    return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
}
