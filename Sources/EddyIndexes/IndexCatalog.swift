// The index catalog: every index of a database with its state. The committer owns changes
// (rules changes, build progress) and publishes each new version here; readers (queries,
// status, verify) take a consistent copy. Persisted in `meta` (see `MetaKeys.indexPrefix`),
// always in the same batch as the entries it describes.

import EddyModel
import EddyStorage
import EddyTree
import Synchronization

package final class IndexCatalog: Sendable {
    private let current: Mutex<[IndexDefinition]>

    package init(_ definitions: [IndexDefinition]) {
        self.current = Mutex(definitions)
    }

    package var definitions: [IndexDefinition] { self.current.withLock { $0 } }

    package func publish(_ definitions: [IndexDefinition]) {
        self.current.withLock { $0 = definitions }
    }

    /// Reads every catalog record and the next id from `meta`.
    package static func load(_ database: Database, snapshot: Snapshot? = nil) throws(EddyError) -> (definitions: [IndexDefinition], nextID: UInt32) {
        let meta = database.columnFamily(ColumnFamilies.meta)
        let iterator = database.makeIterator(meta, snapshot: snapshot)
        var definitions: [IndexDefinition] = []
        iterator.seek(MetaKeys.indexPrefix)
        while iterator.isValid, iterator.keyHasPrefix(MetaKeys.indexPrefix) {
            let key = iterator.key
            guard key.count == MetaKeys.indexPrefix.count + 4 else {
                throw EddyError(.corruption, "index catalog key \(key) has the wrong length")
            }
            let id = key[MetaKeys.indexPrefix.count...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            definitions.append(try IndexDefinition.decode(id: id, record: iterator.value))
            iterator.next()
        }
        do {
            try iterator.checkError()
            let next = try database.get(meta, MetaKeys.indexNextID, snapshot: snapshot)
            let nextID = next.map { $0.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } } ?? 1
            return (definitions, nextID)
        } catch {
            throw EngineErrors.storage(error, while: "reading the index catalog")
        }
    }
}
