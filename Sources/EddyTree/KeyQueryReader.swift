// A key-ordered query's window read straight from the tree (`orderByKey` with bounds and a
// limit), shared by query execution and live-event windows.

import EddyModel
import EddyStorage

/// Reads the window of a key-ordered query from the tree.
package struct KeyQueryReader {
    package let iterator: Iterator
    package let location: [UInt8]
    package let query: Query

    package init(iterator: Iterator, location: [UInt8], query: Query) {
        self.iterator = iterator
        self.location = location
        self.query = query
    }

    private func position(_ bound: Query.Bound?) -> (KeyBoundPosition, inclusive: Bool)? {
        guard let bound, case .string(let key) = bound.value else { return nil }
        return (KeyBoundPosition(key), bound.inclusive)
    }

    package func read() throws(EddyError) -> Value {
        var children: [String: Value] = [:]
        // Sized once for a limited window instead of rehashing as it doubles from one.
        if let limit = self.query.limit { children.reserveCapacity(min(limit.count, WindowJSON.membersReservedMax)) }
        try self.forEachChild { segment, prefix, positioned throws(EddyError) in
            var bytes = segment
            let key = try PathKeyEncoding.decodeSegment(&bytes)
            children[key] = try TreeReader.readSubtree(self.iterator, prefix: prefix, positioned: positioned).value
        }
        return children.isEmpty ? .null : .object(children)
    }

    /// The window as the JSON text `JSONWriter.bytes(read())` gives, written straight from the
    /// tree (`TreeJSONWriter`, `SegmentJSON`): members in key order, an array when the keys
    /// qualify, `null` when empty.
    package func readJSON() throws(EddyError) -> [UInt8] {
        var window = WindowJSON(capacity: 4096, expectedMembers: self.query.limit?.count)
        try self.forEachChild { segment, prefix, positioned throws(EddyError) in
            try window.append(segment: segment) { out throws(EddyError) in
                try TreeJSONWriter.appendSubtree(self.iterator, prefix: prefix, positioned: positioned, into: &out)
            }
        }
        // limitToLast reads backward; the object lists its members in key order.
        if case .last? = self.query.limit { return window.finish(reversed: true) }
        return window.finish()
    }

    /// Calls `visit` for each child in the window (forward, or backward for limitToLast) with
    /// its encoded segment, its key prefix and whether the iterator is already on its first
    /// record; `visit` reads the child from the iterator (`TreeReader`, `TreeJSONWriter`).
    private func forEachChild(
        _ visit: (ArraySlice<UInt8>, [UInt8], Bool) throws(EddyError) -> Void
    ) throws(EddyError) {
        let start = self.position(self.query.start)
        let end = self.position(self.query.end)
        switch self.query.limit {
        case .last(let count):
            try self.readBackward(start: start, end: end, count: count, visit)
        case .first(let count):
            try self.readForward(start: start, end: end, count: count, visit)
        case nil:
            try self.readForward(start: start, end: end, count: Int.max, visit)
        }
    }

    /// The child segment at the iterator (nil at the location's own primitive) and its prefix.
    private func currentChild() throws(EddyError) -> (segment: ArraySlice<UInt8>, prefix: [UInt8])? {
        let key = self.iterator.key
        guard key.count > self.location.count else { return nil }
        guard let length = PathKeyEncoding.segmentLength(key[self.location.count...]) else {
            throw EddyError(.corruption, "malformed tree key under key prefix \(self.location)")
        }
        let end = self.location.count + length
        return (key[self.location.count..<end], Array(key[..<end]))
    }

    /// True when a child with `segment` lies after an end bound (outside the window).
    private func isAfter(_ segment: ArraySlice<UInt8>, _ end: (KeyBoundPosition, inclusive: Bool)) -> Bool {
        switch end.0 {
        case .key(let e):
            let order = compareBytes(segment, e[...])
            return order > 0 || (order == 0 && !end.inclusive)
        case .between(let x):
            return compareBytes(segment, x[...]) > 0
        }
    }

    /// True when a child with `segment` lies before a start bound (outside the window).
    private func isBefore(_ segment: ArraySlice<UInt8>, _ start: (KeyBoundPosition, inclusive: Bool)) -> Bool {
        switch start.0 {
        case .key(let s):
            let order = compareBytes(segment, s[...])
            return order < 0 || (order == 0 && !start.inclusive)
        case .between(let x):
            return compareBytes(segment, x[...]) < 0
        }
    }

    private func readForward(
        start: (KeyBoundPosition, inclusive: Bool)?, end: (KeyBoundPosition, inclusive: Bool)?, count: Int,
        _ visit: (ArraySlice<UInt8>, [UInt8], Bool) throws(EddyError) -> Void
    ) throws(EddyError) {
        switch start {
        case nil: self.iterator.seek(self.location, within: self.location)
        case (.key(let s), let inclusive)?: self.iterator.seek(self.location + s + (inclusive ? [] : [0xFF]), within: self.location)
        case (.between(let x), _)?: self.iterator.seek(self.location + x, within: self.location)
        }
        var visited = 0
        while visited < count, self.iterator.isValid, self.iterator.keyHasPrefix(self.location) {
            guard let child = try self.currentChild() else {
                self.iterator.next()  // a primitive at the location has no children
                continue
            }
            if let end, self.isAfter(child.segment, end) { break }
            // The iterator is on the child's first record; reading leaves it on the next child.
            try visit(child.segment, child.prefix, true)
            visited += 1
        }
        try TreeReader.check(self.iterator)
    }

    private func readBackward(
        start: (KeyBoundPosition, inclusive: Bool)?, end: (KeyBoundPosition, inclusive: Bool)?, count: Int,
        _ visit: (ArraySlice<UInt8>, [UInt8], Bool) throws(EddyError) -> Void
    ) throws(EddyError) {
        // Position on the last record at or before the end of the window.
        let upper: [UInt8]
        var exclusiveKey = false
        switch end {
        case nil: upper = self.location + [0xFF]
        case (.key(let e), let inclusive)?:
            upper = self.location + e + (inclusive ? [0xFF] : [])
            exclusiveKey = !inclusive
        case (.between(let x), _)?: upper = self.location + x
        }
        self.iterator.seekForPrev(upper)
        if exclusiveKey, self.iterator.isValid, self.iterator.key == upper { self.iterator.previous() }
        var visited = 0
        while visited < count, self.iterator.isValid, self.iterator.keyHasPrefix(self.location) {
            guard let child = try self.currentChild() else { break }  // the location's own primitive
            if let start, self.isBefore(child.segment, start) { break }
            try visit(child.segment, child.prefix, false)
            visited += 1
            // Step before this child's first record.
            self.iterator.seekForPrev(child.prefix)
            if self.iterator.isValid, self.iterator.key == child.prefix { self.iterator.previous() }
        }
        try TreeReader.check(self.iterator)
    }
}
