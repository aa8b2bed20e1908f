// RocksDB checkpoints: a consistent copy of the open database in another directory of the same
// file system, made while writes go on. SST files are hard links (immutable, so sharing them is
// safe); the MANIFEST, OPTIONS and CURRENT are copied. Memtables are flushed first, so the
// checkpoint needs no WAL replay and holds every batch written before the call.

import CRocksDB
import Synchronization

extension Database {
    /// Writes a checkpoint to `directory`, which must not exist yet (its parent must).
    public func checkpoint(to directory: String) throws(RocksDBError) {
        try self.closed.withLock { (closed: inout Bool) throws(RocksDBError) in
            guard !closed else { throw RocksDBError(code: .other, message: "the database is closed") }
            var error: UnsafeMutablePointer<CChar>? = nil
            guard let checkpoint = rocksdb_checkpoint_object_create(self.db, &error) else {
                let message = error.map { String(cString: $0) } ?? "rocksdb_checkpoint_object_create failed"
                if let error { rocksdb_free(error) }
                throw RocksDBError(code: RocksDBError.code(of: message), message: message)
            }
            defer { rocksdb_checkpoint_object_destroy(checkpoint) }
            // 0: flush the memtables first, so the checkpoint is whole without the WAL.
            try RocksDBError.check { err in rocksdb_checkpoint_create(checkpoint, directory, 0, err) }
        }
    }
}
