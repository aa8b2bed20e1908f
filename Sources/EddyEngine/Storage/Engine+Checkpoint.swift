// Online backups: a checkpoint of this namespace's database, made while it serves (no pause of
// writes), and what it holds: the database id and the last log entry in it. A database restored
// from it keeps both, so followers and resumable subscribers continue after that entry.

import EddyModel
import EddyStorage
import EddyTree
import Foundation

public struct CheckpointInfo: Sendable {
    /// The directory the checkpoint was written to.
    public var directory: String
    /// The database's id (restores keep it: followers of it stay followers).
    public var databaseID: String
    /// The newest log entry in the checkpoint (nil: none yet).
    public var last: LogID?
}

extension Engine {
    /// Writes a consistent checkpoint of this database to `directory` (must not exist; same
    /// file system as the data directory, since SSTs are hard-linked).
    public func checkpoint(to directory: String) throws(EddyError) -> CheckpointInfo {
        do {
            try self.database.checkpoint(to: directory)
        } catch {
            throw EngineErrors.storage(error, while: "writing a checkpoint to \(directory)")
        }
        // The exact last entry the checkpoint holds: read from the checkpoint itself (read-only
        // opens write nothing).
        let last: LogID?
        do {
            var options = StorageOptions()
            options.readOnly = true
            let copy = try Database(path: directory, columnFamilies: ColumnFamilies.all, options: options)
            defer { copy.close() }
            last = try Self.lastLogID(copy)
        } catch let error as EddyError {
            throw error
        } catch {
            throw EddyError(.io, "reading back the checkpoint in \(directory): \(error)")
        }
        return CheckpointInfo(directory: directory, databaseID: self.databaseID, last: last)
    }
}
