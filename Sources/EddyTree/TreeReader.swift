// Reads values out of the `tree` column family (layout: one record per leaf, key =
// `PathKeyEncoding` of its path, value = `LeafEncoding`). Works over any iterator: the
// database, a snapshot, or a write batch merged with the database.
//
// Invariant relied on (checked by `Engine.verify()`): no leaf key is a prefix of another key,
// i.e. a primitive never has descendants. Keys arrive in Firebase key order, so objects are
// assembled with an explicit stack of open nodes, never by recursion.

import EddyModel
import EddyStorage

package enum TreeReader {
    /// The value stored at the path whose encoding is `prefix`, and the keys of its leaves when
    /// `collectKeys` (the committer deletes them). `positioned`: the iterator is already on the
    /// subtree's first key (or past it when the subtree is empty), so no seek is needed.
    /// Leaves the iterator on the first key after the subtree.
    package static func readSubtree(
        _ iterator: Iterator, prefix: [UInt8], collectKeys: Bool = false, positioned: Bool = false
    ) throws(EddyError) -> (value: Value, leafKeys: [[UInt8]]) {
        var leafKeys: [[UInt8]] = []
        if !positioned { iterator.seek(prefix, within: prefix) }
        // open[0] is the node at `prefix`; open[i] the i-th open descendant along the current key.
        var openKeys: [String] = []
        var openChildren: [[String: Value]] = [[:]]
        var atPrefix: Value? = nil
        while iterator.isValid, iterator.keyHasPrefix(prefix) {
            let key = iterator.key
            if collectKeys { leafKeys.append(key) }
            let leaf = try iterator.withValue { bytes throws(EddyError) in try LeafEncoding.decode(bytes) }
            if key.count == prefix.count {
                atPrefix = leaf
                iterator.next()
                continue
            }
            var rest = key[prefix.count...]
            var keys: [String] = []
            while !rest.isEmpty { keys.append(try PathKeyEncoding.decodeSegment(&rest)) }
            // Close open nodes that are not ancestors of this leaf.
            var common = 0
            while common < openKeys.count, common < keys.count - 1, openKeys[common] == keys[common] { common += 1 }
            while openKeys.count > common {
                let closed = openChildren.removeLast()
                openChildren[openChildren.count - 1][openKeys.removeLast()] = .object(closed)
            }
            for k in keys[common..<(keys.count - 1)] {
                openKeys.append(k)
                openChildren.append([:])
            }
            openChildren[openChildren.count - 1][keys[keys.count - 1]] = leaf
            iterator.next()
        }
        try check(iterator)
        while !openKeys.isEmpty {
            let closed = openChildren.removeLast()
            openChildren[openChildren.count - 1][openKeys.removeLast()] = .object(closed)
        }
        if let atPrefix {
            guard openChildren[0].isEmpty else {
                throw EddyError(.corruption, "tree has a primitive with descendants under key prefix \(prefix)")
            }
            return (atPrefix, leafKeys)
        }
        return (openChildren[0].isEmpty ? .null : .object(openChildren[0]), leafKeys)
    }

    /// Firebase `shallow=true`: a primitive as is; an object's children each as `true`.
    /// Skips every child's subtree with one seek.
    package static func readShallow(_ iterator: Iterator, prefix: [UInt8]) throws(EddyError) -> Value {
        iterator.seek(prefix, within: prefix)
        var children: [String: Value] = [:]
        while iterator.isValid, iterator.keyHasPrefix(prefix) {
            let key = iterator.key
            if key.count == prefix.count {
                return try iterator.withValue { bytes throws(EddyError) in try LeafEncoding.decode(bytes) }
            }
            var rest = key[prefix.count...]
            let before = rest.count
            let child = try PathKeyEncoding.decodeSegment(&rest)
            children[child] = .bool(true)
            let childPrefix = Array(key[..<(prefix.count + before - rest.count)])
            iterator.seek(PathKeyEncoding.subtreeEnd(childPrefix), within: prefix)
        }
        try check(iterator)
        return children.isEmpty ? .null : .object(children)
    }

    package static func check(_ iterator: Iterator) throws(EddyError) {
        do {
            try iterator.checkError()
        } catch {
            throw EngineErrors.storage(error, while: "reading the tree")
        }
    }
}
