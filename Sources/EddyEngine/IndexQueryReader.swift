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

final class IndexQueryReader {
    let definition: IndexDefinition
    let index: Iterator
    /// Made on the first uncovered entry: creating an iterator costs more than reading a
    /// small window.
    private let makeTree: () -> Iterator
    private lazy var tree: Iterator = self.makeTree()
    let location: [UInt8]
    let query: Query

    init(definition: IndexDefinition, index: Iterator, makeTree: @escaping () -> Iterator, location: [UInt8], query: Query) {
        self.definition = definition
        self.index = index
        self.makeTree = makeTree
        self.location = location
        self.query = query
    }

    /// The selected children as a `Value` (`.null` when none).
    func read() throws(EddyError) -> Value {
        var children: [String: Value] = [:]
        try self.scan { key, covered, childPrefix throws(EddyError) in
            if let covered {
                var value = try JSONParser.parse(covered)
                // A rendered value holds `null` only as an array hole.
                if Self.mayHoldNull(covered) { value = value.normalized() }
                children[key] = value
            } else {
                children[key] = try TreeReader.readSubtree(self.tree, prefix: childPrefix()).value
            }
        }
        return children.isEmpty ? .null : .object(children)
    }

    /// The selected children as the JSON text a read answers (`JSONWriter`'s rules: an object,
    /// or an array when the keys qualify; `null` when none), joined from covered entries
    /// without decoding them. Members come in query order.
    func readJSON() throws(EddyError) -> [UInt8] {
        var members: [(key: String, json: [UInt8])] = []
        try self.scan { key, covered, childPrefix throws(EddyError) in
            if let covered {
                members.append((key, Array(covered)))
            } else {
                let value = try TreeReader.readSubtree(self.tree, prefix: childPrefix()).value
                members.append((key, JSONWriter.bytes(value)))
            }
        }
        return JSONWriter.renderMembers(members)
    }

    private static func mayHoldNull(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 4 else { return false }
        for i in 0...(bytes.count - 4) where bytes[i] == UInt8(ascii: "n") {
            if bytes[i + 1] == UInt8(ascii: "u"), bytes[i + 2] == UInt8(ascii: "l"), bytes[i + 3] == UInt8(ascii: "l") { return true }
        }
        return false
    }

    /// Calls `visit` for every entry in the window, in query order (backward for limitToLast),
    /// with the child key, the covered JSON (valid during the call) or nil, and a way to get
    /// the child's tree prefix.
    private func scan(
        _ visit: (String, UnsafeRawBufferPointer?, () -> [UInt8]) throws(EddyError) -> Void
    ) throws(EddyError) {
        let prefix = self.definition.keyPrefix + self.location
        let lower = prefix + Self.lower(self.query.start)
        let upper = prefix + Self.upper(self.query.end)
        guard lower.lexicographicallyPrecedes(upper) else { return }
        var count = 0
        switch self.query.limit {
        case .last(let limit):
            self.index.seekForPrev(upper)
            if self.index.isValid, self.index.withKey({ compare($0, upper) == 0 }) { self.index.previous() }
            while count < limit, self.index.isValid, self.index.withKey({ compare($0, lower) >= 0 }) {
                try self.visitEntry(prefixCount: prefix.count, visit)
                count += 1
                self.index.previous()
            }
        case .first(let limit):
            self.index.seek(lower)
            while count < limit, self.index.isValid, self.index.withKey({ compare($0, upper) < 0 }) {
                try self.visitEntry(prefixCount: prefix.count, visit)
                count += 1
                self.index.next()
            }
        case nil:
            self.index.seek(lower)
            while self.index.isValid, self.index.withKey({ compare($0, upper) < 0 }) {
                try self.visitEntry(prefixCount: prefix.count, visit)
                self.index.next()
            }
        }
        do {
            try self.index.checkError()
        } catch {
            throw EngineErrors.storage(error, while: "reading an index")
        }
    }

    private func visitEntry(
        prefixCount: Int, _ visit: (String, UnsafeRawBufferPointer?, () -> [UInt8]) throws(EddyError) -> Void
    ) throws(EddyError) {
        let key = self.index.key
        var rest = key[prefixCount...]
        rest = rest.dropFirst(try SortValueEncoding.length(rest))
        let segmentStart = rest.startIndex
        let childKey = try PathKeyEncoding.decodeSegment(&rest)
        let segmentEnd = rest.startIndex
        try self.index.withValue { bytes throws(EddyError) in
            guard let tag = bytes.first else { throw EddyError(.corruption, "empty index entry value") }
            let covered = tag == IndexDefinition.coveredTag ? UnsafeRawBufferPointer(rebasing: bytes[1...]) : nil
            try visit(childKey, covered, { self.location + key[segmentStart..<segmentEnd] })
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

    static func lower(_ bound: Query.Bound?) -> [UInt8] {
        guard let bound else { return [] }
        var out = SortValueEncoding.encode(bound.value)
        switch bound.key.map(KeyPoint.init) {
        case nil: if !bound.inclusive { out.append(0xFF) }
        case .min?: break
        case .max?: out.append(0xFF)
        case .at(let segment)?:
            out += segment
            if !bound.inclusive { out.append(0xFF) }
        case .between(let bytes)?: out += bytes
        }
        return out
    }

    static func upper(_ bound: Query.Bound?) -> [UInt8] {
        guard let bound else { return [0xFF] }
        var out = SortValueEncoding.encode(bound.value)
        switch bound.key.map(KeyPoint.init) {
        case nil: if bound.inclusive { out.append(0xFF) }
        case .min?: break
        case .max?: out.append(0xFF)
        case .at(let segment)?:
            out += segment
            if bound.inclusive { out.append(0xFF) }
        case .between(let bytes)?: out += bytes
        }
        return out
    }
}

/// Bytewise comparison of a key with `b`.
private func compare(_ a: UnsafeRawBufferPointer, _ b: [UInt8]) -> Int {
    let n = min(a.count, b.count)
    for i in 0..<n where a[i] != b[i] { return a[i] < b[i] ? -1 : 1 }
    return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
}
