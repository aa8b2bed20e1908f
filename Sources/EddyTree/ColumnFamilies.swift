// Names of the column families of an Eddy database and the keys of `meta`.

import EddyModel
import EddyStorage

package enum ColumnFamilies {
    /// One record per leaf; see `TreeReader` and `PathKeyEncoding`.
    package static let tree = "tree"
    /// Secondary index entries; see `IndexDefinition`.
    package static let index = "index"
    /// The operation log: key = log ID, value = `LogEntryCodec`.
    package static let log = "log"
    /// Format version, database id, later the index catalog and rules.
    package static let meta = "meta"
    /// Priorities (format 4): key = `PathKeyEncoding` of the node that has one, value =
    /// `LeafEncoding` of the priority (a number or a string). Only existing nodes have a
    /// record; the tree's records never hold priorities, so reads that answer data without
    /// them (Firebase's default) never look here. See `PriorityStore`.
    package static let priority = "priority"

    package static let all = [tree, index, log, meta, priority]
}

package enum MetaKeys {
    package static let formatVersion = Array("format-version".utf8)
    package static let databaseID = Array("database-id".utf8)
    /// The rules document (canonical JSON), absent until rules are set.
    package static let rules = Array("rules".utf8)
    /// Index catalog records: "index/" ++ u32be(id) -> JSON (`IndexDefinition.record`).
    package static let indexPrefix = Array("index/".utf8)
    /// The next index id to hand out (u32be); ids are never reused, so entries of a dropped
    /// index can never be mistaken for a new one's.
    package static let indexNextID = Array("index-next-id".utf8)
    /// On a follower's replica: the database id of the leader's database it replicates (set at
    /// the first connection; an optional key, so no format change).
    package static let replicaOf = Array("replica-of".utf8)
    /// The newest pruned log entry's id (absent: the log was never pruned and starts with the
    /// database's first entry).
    package static let logPrunedThrough = Array("log-pruned-through".utf8)

    /// `logPrunedThrough` as stored: nil when the log holds every entry since the first.
    package static func readLogPrunedThrough(in database: Database) throws(EddyError) -> LogID? {
        do {
            return try database.get(database.columnFamily(ColumnFamilies.meta), MetaKeys.logPrunedThrough)
                .flatMap { LogID(String(decoding: $0, as: UTF8.self)) }
        } catch {
            throw EngineErrors.storage(error, while: "reading how far the log was pruned")
        }
    }
}

public enum StorageFormat {
    /// Version of the on-disk layout (tree keys, leaf and log encodings). Bump on any change
    /// and refuse to open newer versions.
    /// - 1: tree, log, meta (format version, database id, rules).
    /// - 2: index catalog in meta and entries in `index`. A version 1 database is upgraded when
    ///   opened (nothing to convert); a version 1 binary refuses version 2, because it would
    ///   write without maintaining the indexes.
    /// - 3: log entries of format version 2 (with the leadership term). Older databases are
    ///   upgraded when opened (version 1 entries stay and read as term 0); a version 2 binary
    ///   refuses version 3, because it cannot decode the new entries.
    /// - 4: the `priority` family. Older databases are upgraded when opened (the family is
    ///   created empty); a version 3 binary refuses version 4, because it would write without
    ///   keeping priorities.
    /// - 5: wide integers (leaf tag 0x05: 64-bit integers a Double cannot hold exactly; log
    ///   entries hold them as JSON integers). Older databases are upgraded when opened (nothing
    ///   to convert); a version 4 binary refuses version 5, because it cannot decode such leaves.
    public static let version: UInt8 = 5
    /// Versions this binary opens (older ones are upgraded in place).
    public static let readable: ClosedRange<UInt8> = 1...5
}
