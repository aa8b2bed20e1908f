// Writes a subtree's compact JSON text straight from the tree's leaves, never building a
// `Value`: byte for byte what `JSONWriter.write(TreeReader.readSubtree(...).value)` writes.
//
// Invariants relied on and kept:
// - leaves arrive in Firebase key order, which is `JSONWriter`'s member order, so members are
//   written as they come; containers are opened and closed along each leaf's key with a stack;
// - a container renders as an array exactly when `JSONWriter` would make one (every key an
//   array index, the largest below twice the count). A container whose first key is a string
//   is an object without looking further (the common case); one whose first key is an integer
//   is decided by a scan of its keys, on the same iterator, which then seeks back: one view;
// - a primitive never has descendants (checked: `corruption` otherwise, as `TreeReader` does).

import EddyModel
import EddyStorage

package enum TreeJSONWriter {
    private struct Container {
        /// The length of the container's encoded key (its children's segments start here).
        let end: Int
        let isArray: Bool
        /// Members (array elements, holes included) written so far.
        var written = 0
    }

    /// Appends the JSON of the subtree whose encoding is `prefix` (`null` when empty).
    /// `positioned`: the iterator is already on the subtree's first key (or past it when the
    /// subtree is empty), so no seek is needed. Leaves the iterator on the first key after it.
    /// Stops early, returning false with `out` cut anywhere, once `out` holds more than
    /// `bytesMax` bytes (checked after each leaf), or when `eachLeaf` (called with every
    /// leaf's key and value before it is written) returns false.
    @discardableResult
    package static func appendSubtree(
        _ iterator: Iterator, prefix: [UInt8], positioned: Bool = false, bytesMax: Int = .max, into out: inout [UInt8],
        eachLeaf: ((_ key: [UInt8], _ leaf: Value) -> Bool)? = nil
    ) throws(EddyError) -> Bool {
        if !positioned { iterator.seek(prefix, within: prefix) }
        guard iterator.isValid, iterator.keyHasPrefix(prefix) else {
            try TreeReader.check(iterator)
            out.append(contentsOf: "null".utf8)
            return true
        }
        var key: [UInt8] = iterator.key
        if key.count == prefix.count {
            let leaf = try Self.leaf(iterator)
            if let eachLeaf, !eachLeaf(key, leaf) { return false }
            JSONWriter.write(leaf, into: &out, pretty: false, indent: 0)
            iterator.next()
            if iterator.isValid, iterator.keyHasPrefix(prefix) { throw Self.primitiveWithDescendants(prefix) }
            try TreeReader.check(iterator)
            return true
        }
        var open: [Container] = []
        var previous: [UInt8] = []
        while true {
            var position: Int
            if open.isEmpty {
                position = prefix.count
                let isArray = try Self.rendersAsArray(iterator, container: prefix, current: key)
                out.append(UInt8(ascii: isArray ? "[" : "{"))
                open.append(Container(end: position, isArray: isArray))
            } else {
                // Close the containers this leaf is not in: a container is an ancestor exactly
                // when the leaf shares its whole key (segments end in a 0x00 no key byte equals).
                let common = Self.commonPrefixLength(key, previous)
                while open[open.count - 1].end > common { Self.close(open.removeLast(), into: &out) }
                position = open[open.count - 1].end
                if common >= position, let length = PathKeyEncoding.segmentLength(key[position...]), common >= position + length {
                    // The previous leaf's own member here was this segment: a primitive with descendants.
                    throw Self.primitiveWithDescendants(Array(key[..<(position + length)]))
                }
            }
            while true {
                guard let length = PathKeyEncoding.segmentLength(key[position...]) else {
                    throw EddyError(.corruption, "malformed tree key under key prefix \(prefix)")
                }
                let end = position + length
                if end == key.count {
                    let leaf = try Self.leaf(iterator)
                    if let eachLeaf, !eachLeaf(key, leaf) { return false }
                    Self.beginMember(segment: key, position..<end, in: &open[open.count - 1], into: &out)
                    JSONWriter.write(leaf, into: &out, pretty: false, indent: 0)
                    break
                }
                Self.beginMember(segment: key, position..<end, in: &open[open.count - 1], into: &out)
                let isArray = try Self.rendersAsArray(iterator, container: Array(key[..<end]), current: key)
                out.append(UInt8(ascii: isArray ? "[" : "{"))
                open.append(Container(end: end, isArray: isArray))
                position = end
            }
            if out.count > bytesMax { return false }
            swap(&previous, &key)
            iterator.next()
            guard iterator.isValid, iterator.keyHasPrefix(prefix) else { break }
            iterator.withKey { bytes in
                key.removeAll(keepingCapacity: true)
                key.append(contentsOf: bytes)
            }
        }
        try TreeReader.check(iterator)
        while let container = open.popLast() { Self.close(container, into: &out) }
        return true
    }

    private static func leaf(_ iterator: Iterator) throws(EddyError) -> Value {
        try iterator.withValue { bytes throws(EddyError) in try LeafEncoding.decode(bytes) }
    }

    /// Writes what precedes the member whose segment is `key[range]`: holes and the separator
    /// in an array, the separator and the key in an object.
    private static func beginMember(segment key: [UInt8], _ range: Range<Int>, in container: inout Container, into out: inout [UInt8]) {
        if container.isArray {
            // `rendersAsArray` saw every key of the container as an array index.
            let index = key.withUnsafeBytes { SegmentJSON.arrayIndex(UnsafeRawBufferPointer(rebasing: $0[range])) }!
            while container.written < index {
                if container.written > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: "null".utf8)
                container.written += 1
            }
            if container.written > 0 { out.append(UInt8(ascii: ",")) }
        } else {
            if container.written > 0 { out.append(UInt8(ascii: ",")) }
            key.withUnsafeBytes { _ = SegmentJSON.appendKey(UnsafeRawBufferPointer(rebasing: $0[range]), to: &out) }
            out.append(UInt8(ascii: ":"))
        }
        container.written += 1
    }

    private static func close(_ container: Container, into out: inout [UInt8]) {
        out.append(UInt8(ascii: container.isArray ? "]" : "}"))
    }

    /// Whether the container encoded as `container` renders as an array, scanned on the
    /// iterator itself, which then seeks back to `current` (the container's first leaf).
    private static func rendersAsArray(_ iterator: Iterator, container: [UInt8], current: [UInt8]) throws(EddyError) -> Bool {
        let scans = current[container.count] != PathKeyEncoding.stringTag
        let isArray = try self.rendersAsArray(iterator, container, firstLeaf: current)
        if scans { iterator.seek(current) }
        return isArray
    }

    /// Whether the node whose key encoding is `container` (it has children) renders as an
    /// array: every child key an array index, the largest below twice the count. `firstLeaf`,
    /// the node's first leaf key, decides at once when its first child key is a string (an
    /// object, the common case); otherwise `iterator` walks the children (one seek per child)
    /// and is left anywhere.
    package static func rendersAsArray(_ iterator: Iterator, _ container: [UInt8], firstLeaf: [UInt8]) throws(EddyError) -> Bool {
        if firstLeaf[container.count] == PathKeyEncoding.stringTag { return false }
        var count = 0
        var largest = -1
        iterator.seek(container, within: container)
        while iterator.isValid, iterator.keyHasPrefix(container) {
            let key = iterator.key
            guard let length = PathKeyEncoding.segmentLength(key[container.count...]) else {
                throw EddyError(.corruption, "malformed tree key under key prefix \(container)")
            }
            let end = container.count + length
            guard let index = key.withUnsafeBytes({ SegmentJSON.arrayIndex(UnsafeRawBufferPointer(rebasing: $0[container.count..<end])) })
            else { return false }
            count += 1
            largest = max(largest, index)
            iterator.seek(PathKeyEncoding.subtreeEnd(Array(key[..<end])), within: container)
        }
        try TreeReader.check(iterator)
        return count > 0 && largest < 2 * count
    }

    private static func commonPrefixLength(_ a: [UInt8], _ b: [UInt8]) -> Int {
        let n = min(a.count, b.count)
        var i = 0
        while i < n, a[i] == b[i] { i += 1 }
        return i
    }

    private static func primitiveWithDescendants(_ prefix: [UInt8]) -> EddyError {
        EddyError(.corruption, "tree has a primitive with descendants under key prefix \(prefix)")
    }
}
