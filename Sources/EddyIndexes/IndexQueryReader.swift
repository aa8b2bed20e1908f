// Reads the window of a value- or child-ordered query from an index: entries of one location
// are contiguous and sorted by (sort value, child key), so the window is one seek and a scan,
// forward, or backward for limitToLast. Covered entries carry their child; others are read
// from the tree at the same snapshot.
//
// Bounds become byte strings over an entry's suffix (after id and location): the window is
// every suffix s with lower <= s < upper.
//   startAt(v)      lower = sv(v)              endAt(v)      upper = sv(v) 0xFF
//   startAfter(v)   lower = sv(v) 0xFF         endBefore(v)  upper = sv(v)
//   startAt(v, k)   lower = sv(v) seg(k)       endAt(v, k)   upper = sv(v) seg(k) 0xFF
//   startAfter(v,k) lower = sv(v) seg(k) 0xFF  endBefore(v,k) upper = sv(v) seg(k)
// (a key no stored key can equal uses its `KeyBoundPosition.between` bytes for seg(k) in every
// case; Firebase's sentinels "[MIN_NAME]"/"[MAX_NAME]" sort before/after every key). Sort
// values and segments are self-delimiting and segments start below 0xFF, which makes these
// exact.

import EddyModel
import EddyStorage
import EddyTree

package final class IndexQueryReader {
    let definition: IndexDefinition
    let index: Iterator
    /// Made on the first uncovered entry: creating an iterator costs more than reading a
    /// small window. Nil when no tree iterator can read the index iterator's state any more.
    private let makeTree: () -> Iterator?
    private var madeTree: Iterator?
    /// Set when `makeTree` gave nil: the read threw, and must be done again on a snapshot.
    package private(set) var stateMoved = false
    let location: [UInt8]
    let query: Query

    package init(definition: IndexDefinition, index: Iterator, makeTree: @escaping () -> Iterator?, location: [UInt8], query: Query) {
        self.definition = definition
        self.index = index
        self.makeTree = makeTree
        self.location = location
        self.query = query
    }

    private var tree: Iterator {
        get throws(EddyError) {
            if let madeTree { return madeTree }
            guard let made = self.makeTree() else {
                self.stateMoved = true
                throw EddyError(.unavailable, "the database changed while \(self.definition.description) was read; read again")
            }
            self.madeTree = made
            return made
        }
    }

    /// The selected children as a `Value` (`.null` when none).
    package func read() throws(EddyError) -> Value {
        var children: [String: Value] = [:]
        // Sized once for a limited window instead of rehashing as it doubles from one.
        if let limit = self.query.limit { children.reserveCapacity(min(limit.count, WindowJSON.membersReservedMax)) }
        try self.scanRaw { segment, covered, childPrefix throws(EddyError) in
            var bytes = Array(segment)[...]
            let key = try PathKeyEncoding.decodeSegment(&bytes)
            if let covered {
                var value = try JSONParser.parse(covered)  // in place, no copy
                // A rendered value holds `null` only as an array hole.
                if Self.mayHoldNull(covered) { value = value.normalized() }
                children[key] = value
            } else {
                children[key] = try TreeReader.readSubtree(try self.tree, prefix: childPrefix()).value
            }
        }
        return children.isEmpty ? .null : .object(children)
    }

    /// The selected children as the JSON text a read answers (`JSONWriter`'s rules: an object,
    /// or an array when the keys qualify; `null` when none), joined from covered entries
    /// without decoding them: keys are transcoded from their encoded segments, covered values
    /// copied. Members come in query order, a limitToLast window's too (it is read last first).
    package func readJSON() throws(EddyError) -> [UInt8] {
        // A window without a limit is mostly an equalTo's few children.
        var window = WindowJSON(capacity: self.query.limit == nil ? 512 : 4096, expectedMembers: self.query.limit?.count)
        try self.scanRaw { segment, covered, childPrefix throws(EddyError) in
            try window.append(segment: segment) { out throws(EddyError) in
                if let covered {
                    out.append(contentsOf: covered)
                } else {
                    JSONWriter.write(try TreeReader.readSubtree(try self.tree, prefix: childPrefix()).value, into: &out, pretty: false, indent: 0)
                }
            }
        }
        if case .last? = self.query.limit { return window.finish(reversed: true) }
        return window.finish()
    }

    /// Calls `visit` for every entry in the window, in query order (backward for limitToLast),
    /// with the child's encoded key segment, the covered JSON (both valid during the call) or
    /// nil, and a way to get the child's tree prefix.
    private func scanRaw(
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer?, () -> [UInt8]) throws(EddyError) -> Void
    ) throws(EddyError) {
        try self.window { prefixCount throws(EddyError) in
            try self.index.withKey { key throws(EddyError) in
                guard let sortLength = SortValueEncoding.length(key, at: prefixCount),
                    let segmentLength = Self.segmentLength(key, from: prefixCount + sortLength)
                else { throw EddyError(.corruption, "malformed index entry key in \(self.definition.description)") }
                let segment = UnsafeRawBufferPointer(rebasing: key[(prefixCount + sortLength)..<(prefixCount + sortLength + segmentLength)])
                try self.index.withValue { bytes throws(EddyError) in
                    guard let tag = bytes.first else { throw EddyError(.corruption, "empty index entry value") }
                    let covered = tag == IndexDefinition.coveredTag ? UnsafeRawBufferPointer(rebasing: bytes[1...]) : nil
                    try visit(segment, covered, { self.location + Array(segment) })
                }
            }
        }
    }

    private static func segmentLength(_ key: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard start < key.count else { return nil }
        switch key[start] {
        case PathKeyEncoding.intTag:
            guard start + 7 <= key.count else { return nil }
            let total = 8 + (Int(key[start + 5]) << 8 | Int(key[start + 6]))
            return start + total == key.count && key[key.count - 1] == 0 ? total : nil
        case PathKeyEncoding.stringTag:
            return key.count - start >= 2 && key[key.count - 1] == 0 ? key.count - start : nil
        default: return nil
        }
    }

    private static func mayHoldNull(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 4 else { return false }
        for i in 0...(bytes.count - 4) where bytes[i] == UInt8(ascii: "n") {
            if bytes[i + 1] == UInt8(ascii: "u"), bytes[i + 2] == UInt8(ascii: "l"), bytes[i + 3] == UInt8(ascii: "l") { return true }
        }
        return false
    }

    /// Positions the index iterator on each entry of the window in turn and calls `body` with
    /// the length of the entries' common prefix (id and location).
    private func window(_ body: (Int) throws(EddyError) -> Void) throws(EddyError) {
        var prefix = self.definition.keyPrefix
        prefix.append(contentsOf: self.location)
        var lower = prefix
        Self.appendLower(self.query.start, to: &lower)
        var upper = prefix
        Self.appendUpper(self.query.end, to: &upper)
        guard lower.lexicographicallyPrecedes(upper) else { return }
        var count = 0
        switch self.query.limit {
        case .last(let limit):
            self.index.seekForPrev(upper)
            if self.index.isValid, self.index.withKey({ compareBytes($0, upper) == 0 }) { self.index.previous() }
            while count < limit, self.index.isValid, self.index.withKey({ compareBytes($0, lower) >= 0 }) {
                try body(prefix.count)
                count += 1
                self.index.previous()
            }
        case .first(let limit):
            self.index.seek(lower)
            while count < limit, self.index.isValid, self.index.withKey({ compareBytes($0, upper) < 0 }) {
                try body(prefix.count)
                count += 1
                self.index.next()
            }
        case nil:
            self.index.seek(lower)
            while self.index.isValid, self.index.withKey({ compareBytes($0, upper) < 0 }) {
                try body(prefix.count)
                self.index.next()
            }
        }
        do {
            try self.index.checkError()
        } catch {
            throw EngineErrors.storage(error, while: "reading an index")
        }
    }

    private enum KeyPoint {
        case min, max
        case at([UInt8])
        case between([UInt8])

        init(_ key: String) {
            switch key {
            case "[MIN_NAME]": self = .min
            case "[MAX_NAME]": self = .max
            default:
                switch KeyBoundPosition(key) {
                case .key(let segment): self = .at(segment)
                case .between(let bytes): self = .between(bytes)
                }
            }
        }
    }

    static func appendLower(_ bound: Query.Bound?, to out: inout [UInt8]) {
        guard let bound else { return }
        SortValueEncoding.append(bound.value, to: &out)
        switch bound.key.map(KeyPoint.init) {
        case nil: if !bound.inclusive { out.append(0xFF) }
        case .min?: break
        case .max?: out.append(0xFF)
        case .at(let segment)?:
            out += segment
            if !bound.inclusive { out.append(0xFF) }
        case .between(let bytes)?: out += bytes
        }
    }

    static func appendUpper(_ bound: Query.Bound?, to out: inout [UInt8]) {
        guard let bound else {
            out.append(0xFF)
            return
        }
        SortValueEncoding.append(bound.value, to: &out)
        switch bound.key.map(KeyPoint.init) {
        case nil: if bound.inclusive { out.append(0xFF) }
        case .min?: break
        case .max?: out.append(0xFF)
        case .at(let segment)?:
            out += segment
            if bound.inclusive { out.append(0xFF) }
        case .between(let bytes)?: out += bytes
        }
    }
}
