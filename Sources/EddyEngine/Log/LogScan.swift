// The one loop under every walk of the log column family: entries in id order strictly after
// `after` (from the oldest when nil) up to `through` inclusive. Used by the engine's log reads
// and the replication feed, lag counting, and the read-only log of `eddy restore --until` /
// `eddy stats`. A key that is not a push id is corruption, named with the directory.

import EddyModel
import EddyStorage
import EddyTree

enum LogScan {
    /// Calls `body` with each entry's id and the iterator standing on it, in id order, while it
    /// returns true.
    static func forEach(
        _ database: Database, after: LogID?, through: LogID, directory: String,
        _ body: (LogID, Iterator) throws(EddyError) -> Bool
    ) throws(EddyError) {
        let iterator = database.makeIterator(database.columnFamily(ColumnFamilies.log))
        if let after {
            let key = Array(after.rawValue.utf8)
            iterator.seek(key)
            if iterator.isValid, iterator.key == key { iterator.next() }
        } else {
            iterator.seekToFirst()
        }
        while iterator.isValid {
            let key = String(decoding: iterator.key, as: UTF8.self)
            guard let id = LogID(key) else { throw EddyError(.corruption, "log key \(key.debugDescription) in \(directory) is not a push ID") }
            if through < id { break }
            guard try body(id, iterator) else { break }
            iterator.next()
        }
        do {
            try iterator.checkError()
        } catch {
            throw EngineErrors.storage(error, while: "reading the log in \(directory)")
        }
    }
}
