// Reads the `priority` column family (key = `PathKeyEncoding` of a node, value =
// `LeafEncoding` of its priority) over any iterator: the database, a snapshot, or a write batch
// merged with the database. A subtree's priorities are one prefix range, like its leaves.
//
// Invariant relied on (kept by the committer's `TreeWriter`, checked by `Engine.verify()`):
// only a node that exists in `tree` has a record, and every record is a number or a string.

import EddyModel
import EddyStorage

package enum PriorityRecords {
    /// One record: the encoded key and the priority.
    package typealias Record = (key: [UInt8], priority: Value)

    /// Every record at or below the node whose encoding is `prefix`, in key order.
    package static func records(_ iterator: Iterator, under prefix: [UInt8]) throws(EddyError) -> [Record] {
        var out: [Record] = []
        iterator.seek(prefix, within: prefix)
        while iterator.isValid, iterator.keyHasPrefix(prefix) {
            let priority = try iterator.withValue { bytes throws(EddyError) in try LeafEncoding.decode(bytes) }
            out.append((iterator.key, priority))
            iterator.next()
        }
        try TreeReader.check(iterator)
        return out
    }

    /// The priority of the node whose encoding is `key` (`.null`: none).
    package static func priority(_ iterator: Iterator, at key: [UInt8]) throws(EddyError) -> Value {
        iterator.seek(key, within: key)
        guard iterator.isValid, iterator.key == key else {
            try TreeReader.check(iterator)
            return .null
        }
        return try iterator.withValue { bytes throws(EddyError) in try LeafEncoding.decode(bytes) }
    }

    /// The committed priority of the node at `path` (`.null`: none, or a read-only open of a
    /// database without the family).
    package static func priority(in database: Database, at path: Path) throws(EddyError) -> Value {
        guard let family = database.columnFamilyIfPresent(ColumnFamilies.priority) else { return .null }
        return try self.priority(database.makeIterator(family), at: PathKeyEncoding.encode(path))
    }

    /// `value`, the plain value of the node whose encoding is `prefix`, in export form: each
    /// record's priority set on its node (`Value+Priority.swift`).
    package static func merging(_ records: [Record], into value: Value, prefix: [UInt8]) throws(EddyError) -> Value {
        var out = value
        for record in records {
            var rest = record.key[prefix.count...]
            var keys: [String] = []
            while !rest.isEmpty { keys.append(try PathKeyEncoding.decodeSegment(&rest)) }
            out.setPriority(record.priority, at: Path(validatedKeys: keys))
        }
        return out
    }

    /// The value at `prefix` read from `tree` with its priorities from `priorities` (both
    /// iterators over one state).
    package static func exportValue(tree: Iterator, priorities: Iterator, prefix: [UInt8]) throws(EddyError) -> Value {
        let plain = try TreeReader.readSubtree(tree, prefix: prefix).value
        guard !plain.isNull else { return .null }
        return try self.merging(try self.records(priorities, under: prefix), into: plain, prefix: prefix)
    }
}
