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

    func read() throws(EddyError) -> Value {
        let prefix = self.definition.keyPrefix + self.location
        let lower = prefix + Self.lower(self.query.start)
        let upper = prefix + Self.upper(self.query.end)
        var children: [String: Value] = [:]
        guard lower.lexicographicallyPrecedes(upper) else { return .null }
        switch self.query.limit {
        case .last(let count):
            self.index.seekForPrev(upper)
            if self.index.isValid, self.index.withKey({ compare($0, upper) == 0 }) { self.index.previous() }
            while children.count < count, self.index.isValid, self.index.withKey({ compare($0, lower) >= 0 }) {
                try self.collect(prefixCount: prefix.count, into: &children)
                self.index.previous()
            }
        case .first(let count):
            try self.forward(lower: lower, upper: upper, prefixCount: prefix.count, count: count, into: &children)
        case nil:
            try self.forward(lower: lower, upper: upper, prefixCount: prefix.count, count: .max, into: &children)
        }
        do {
            try self.index.checkError()
        } catch {
            throw EngineErrors.storage(error, while: "reading an index")
        }
        return children.isEmpty ? .null : .object(children)
    }

    private func forward(
        lower: [UInt8], upper: [UInt8], prefixCount: Int, count: Int, into children: inout [String: Value]
    ) throws(EddyError) {
        self.index.seek(lower)
        while children.count < count, self.index.isValid, self.index.withKey({ compare($0, upper) < 0 }) {
            try self.collect(prefixCount: prefixCount, into: &children)
            self.index.next()
        }
    }

    private func collect(prefixCount: Int, into children: inout [String: Value]) throws(EddyError) {
        let key = self.index.key
        var rest = key[prefixCount...]
        let sortLength = try SortValueEncoding.length(rest)
        rest = rest.dropFirst(sortLength)
        let segmentStart = rest.startIndex
        let childKey = try PathKeyEncoding.decodeSegment(&rest)
        let value = try self.index.withValue { bytes throws(EddyError) -> Value? in
            guard let tag = bytes.first else { throw EddyError(.corruption, "empty index entry value") }
            if tag == IndexDefinition.coveredTag { return try ValueEncoding.decode(UnsafeRawBufferPointer(rebasing: bytes[1...])) }
            return nil
        }
        if let value {
            children[childKey] = value
        } else {
            let childPrefix = self.location + key[segmentStart..<rest.startIndex]
            children[childKey] = try TreeReader.readSubtree(self.tree, prefix: childPrefix).value
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
