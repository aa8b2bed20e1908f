// One secondary index: an `.indexOn` declaration with the id that prefixes its entries, and its
// build state. Entry layout in the `index` column family (see DESIGN.md "Storage layout"):
//
//   key   = u32be(id) ++ PathKeyEncoding(location) ++ SortValueEncoding(sort value) ++ child segment
//   value = 0x00                              not covered: read the child from the tree
//         | 0x01 JSON(child)                  covered: the child as `JSONWriter` renders it
//                                             (deterministic; a query answer is these bytes
//                                             joined, with no decoding)
//
// `location` is a concrete path matching the declaration's pattern (wildcards resolved); the
// sort value is the child itself (`.value`) or the value at the child path (missing ⇒ null,
// objects all rank the same). Entries of one location are contiguous and in Firebase order
// (sort value, then key), so a query window is one seek and a scan.
//
// Invariant (kept by `IndexMaintainer` and `IndexBuilder`, checked by `verify()`): every entry
// describes the current state of an existing child; once `ready`, every child of every matching
// location has exactly one entry.

import EddyModel
import EddyTree

package struct IndexDefinition: Sendable, Equatable {
    package enum State: Sendable, Equatable {
        /// Children at tree keys below `resumeKey` (within the pattern's scan) are indexed.
        case building(resumeKey: [UInt8])
        case ready
    }

    package let id: UInt32
    package let declaration: Rules.IndexDeclaration
    package var state: State
    /// Children indexed by the build so far (writes during the build are not counted).
    package var indexedCount: Int
    package var createdMilliseconds: UInt64
    package var readyMilliseconds: UInt64?

    package init(
        id: UInt32, declaration: Rules.IndexDeclaration, state: State, indexedCount: Int, createdMilliseconds: UInt64, readyMilliseconds: UInt64?
    ) {
        self.id = id
        self.declaration = declaration
        self.state = state
        self.indexedCount = indexedCount
        self.createdMilliseconds = createdMilliseconds
        self.readyMilliseconds = readyMilliseconds
    }

    package var isReady: Bool { self.state == .ready }

    /// The entries' key prefix.
    package var keyPrefix: [UInt8] { Self.keyPrefix(self.id) }

    package static func keyPrefix(_ id: UInt32) -> [UInt8] {
        [UInt8(truncatingIfNeeded: id >> 24), UInt8(truncatingIfNeeded: id >> 16), UInt8(truncatingIfNeeded: id >> 8), UInt8(truncatingIfNeeded: id)]
    }

    package var depth: Int { self.declaration.location.count }

    /// Declarations that differ only in wildcard names are the same index.
    package var identity: String { Self.identity(self.declaration) }

    package static func identity(_ declaration: Rules.IndexDeclaration) -> String {
        let location = declaration.location.map { segment -> String in
            switch segment {
            case .key(let k): return k
            case .wildcard: return "$"
            }
        }.joined(separator: "/")
        switch declaration.on {
        case .value: return location + " .value"
        case .child(let path): return location + " " + path.keys.joined(separator: "/")
        }
    }

    /// "/posts/$uid"
    package var locationText: String { Self.locationText(self.declaration) }

    static func locationText(_ declaration: Rules.IndexDeclaration) -> String {
        "/" + declaration.location.map { segment -> String in
            switch segment {
            case .key(let k): return k
            case .wildcard(let w): return "$" + w
            }
        }.joined(separator: "/")
    }

    /// ".value" or "metrics/views"
    package var onText: String {
        switch self.declaration.on {
        case .value: return ".value"
        case .child(let path): return path.keys.joined(separator: "/")
        }
    }

    package var description: String { "\(self.locationText) .indexOn \(self.onText)" }

    /// The tree keys of locations the pattern can match all start with this (the encoded
    /// literal segments before the first wildcard).
    package var literalTreePrefix: [UInt8] {
        var out: [UInt8] = []
        for segment in self.declaration.location {
            guard case .key(let k) = segment else { break }
            PathKeyEncoding.appendSegment(k, to: &out)
        }
        return out
    }

    /// True when the first `keys.count` segments of the pattern accept `keys`.
    func patternAccepts(_ keys: ArraySlice<String>) -> Bool {
        for (segment, key) in zip(self.declaration.location, keys) {
            if case .key(let literal) = segment, literal != key { return false }
        }
        return true
    }

    func sortValue(of child: Value) -> Value {
        switch self.declaration.on {
        case .value: return child
        case .child(let path): return child.child(at: path)
        }
    }

    /// The entry key of child `childKey` (segment bytes) of the location encoded as `location`.
    func entryKey(location: [UInt8], sortValue: Value, childSegment: some Collection<UInt8>) -> [UInt8] {
        var key = self.keyPrefix
        key.reserveCapacity(4 + location.count + 16 + childSegment.count)
        key.append(contentsOf: location)
        SortValueEncoding.append(sortValue, to: &key)
        key.append(contentsOf: childSegment)
        return key
    }

    static let uncovered: [UInt8] = [0x00]
    static let coveredTag: UInt8 = 0x01

    /// The entry value for a child: its encoding when it has at most
    /// `Limits.indexCoverLeavesMax` leaves and encodes to at most `Limits.indexCoverBytesMax`
    /// bytes of JSON, else the uncovered marker. (Both limits: a write deep inside a child rereads at
    /// most that many leaves to re-cover it, and every path must agree on what is covered.)
    static func entryValue(_ child: Value) -> [UInt8] {
        guard Self.hasAtMostLeaves(child, Limits.indexCoverLeavesMax) else { return uncovered }
        var out: [UInt8] = [coveredTag]
        out.reserveCapacity(64)
        JSONWriter.write(child, into: &out, pretty: false, indent: 0)
        return out.count - 1 <= Limits.indexCoverBytesMax ? out : uncovered
    }

    private static func hasAtMostLeaves(_ value: Value, _ limit: Int) -> Bool {
        guard case .object = value else { return true }
        var count = 0
        var stack = [value]
        while let node = stack.popLast() {
            guard case .object(let children) = node else {
                count += 1
                if count > limit { return false }
                continue
            }
            stack.append(contentsOf: children.values)
        }
        return true
    }
}

// MARK: Catalog records in `meta`

extension IndexDefinition {
    /// Meta key of this definition: "index/" ++ u32be(id).
    package var metaKey: [UInt8] { MetaKeys.indexPrefix + self.keyPrefix }

    /// The record as JSON (canonical, via `JSONWriter`).
    package var record: Value {
        var object: [String: Value] = [
            "location": .string(self.locationText),
            "on": .string(self.onText),
            "indexed": .number(Double(self.indexedCount)),
            "created": .number(Double(self.createdMilliseconds)),
        ]
        switch self.state {
        case .ready:
            object["state"] = .string("ready")
        case .building(let resumeKey):
            object["state"] = .string("building")
            object["resume"] = .string(Self.hex(resumeKey))
        }
        if let ready = self.readyMilliseconds { object["ready"] = .number(Double(ready)) }
        return .object(object)
    }

    static func decode(id: UInt32, record bytes: [UInt8]) throws(EddyError) -> IndexDefinition {
        func corrupt(_ what: String) -> EddyError {
            EddyError(.corruption, "index catalog record \(id) is unreadable: \(what)")
        }
        let value: Value
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw corrupt(error.message)
        }
        guard case .string(let location) = value["location"], case .string(let on) = value["on"],
            case .string(let state) = value["state"], case .number(let indexed) = value["indexed"],
            case .number(let created) = value["created"]
        else { throw corrupt("missing fields") }
        // Reparse the declaration through the rules parser so both agree on its meaning.
        var rules: [String: Value] = [".indexOn": .string(on)]
        for segment in location.split(separator: "/").reversed() { rules = [String(segment): .object(rules)] }
        let declarations: [Rules.IndexDeclaration]
        do {
            declarations = try Rules.parse(.object(["rules": .object(rules)])).indexes
        } catch {
            throw corrupt(error.message)
        }
        guard declarations.count == 1 else { throw corrupt("declaration \(location) \(on)") }
        let parsedState: State
        switch state {
        case "ready": parsedState = .ready
        case "building":
            guard case .string(let hex) = value["resume"], let key = Self.bytes(hex: hex) else { throw corrupt("bad resume key") }
            parsedState = .building(resumeKey: key)
        default: throw corrupt("unknown state \(state)")
        }
        guard let indexedCount = Int(exactly: indexed), indexedCount >= 0, let createdMilliseconds = UInt64(exactly: created) else {
            throw corrupt("indexed \(indexed) or created \(created) is not a whole number in range")
        }
        var ready: UInt64? = nil
        if case .number(let r) = value["ready"] {
            guard let exact = UInt64(exactly: r) else { throw corrupt("ready \(r) is not a whole number in range") }
            ready = exact
        }
        return IndexDefinition(
            id: id, declaration: declarations[0], state: parsedState, indexedCount: indexedCount, createdMilliseconds: createdMilliseconds,
            readyMilliseconds: ready)
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func bytes(hex: String) -> [UInt8]? {
        let utf8 = Array(hex.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let byte = UInt8(String(decoding: utf8[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(byte)
            i += 2
        }
        return out
    }
}
