// Bulk loading of one column family from keys in ascending order: the pairs are written into
// SST files with RocksDB's SstFileWriter (the family's own format, compression and filters) and
// the files are ingested into the database when the load finishes. For filling an empty
// database (a follower's snapshot bootstrap): no memtable inserts, no write-ahead log, no
// flush, and files that overlap nothing already stored go straight to the bottom level, so
// nothing is compacted again.
//
// Invariants: keys are put in strictly ascending order (RocksDB refuses any other key, and
// that refusal is thrown); no file is empty (one is opened at the first put after the last
// filled up); files not ingested (a load that failed or was dropped) are removed in deinit.
// Use from one thread.

import CRocksDB
import Glibc
import Synchronization

public final class SortedFileLoader {
    private let database: Database
    private let family: ColumnFamily
    private let directory: String
    private let fileBytesMax: UInt64
    private let environment: OpaquePointer
    private var writer: OpaquePointer?
    /// Files finished and not yet ingested.
    private var files: [String] = []
    private var filesMade = 0
    /// Pairs put, over all files.
    public private(set) var count = 0

    /// Loads into `family` of `database`, writing files of about `fileBytesMax` bytes into
    /// `directory` (on the database's file system, so ingesting them is a link, not a copy).
    public init(database: Database, family: ColumnFamily, directory: String, fileBytesMax: UInt64 = 256 << 20) {
        self.database = database
        self.family = family
        self.directory = directory
        self.fileBytesMax = fileBytesMax
        self.environment = rocksdb_envoptions_create()!
    }

    deinit {
        if let writer = self.writer { rocksdb_sstfilewriter_destroy(writer) }
        rocksdb_envoptions_destroy(self.environment)
        for file in self.files { unlink(file) }
        if self.writer != nil { unlink(self.path(self.filesMade - 1)) }
    }

    private func path(_ number: Int) -> String {
        "\(self.directory)/load-\(self.family.name)-\(number).sst"
    }

    /// Adds `key` with `value`; `key` must be greater than every key put before.
    public func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws(RocksDBError) {
        let writer = try self.openWriter()
        try RocksDBError.check { err in
            rocksdb_sstfilewriter_put(
                writer, key.baseAddress?.assumingMemoryBound(to: CChar.self), key.count, value.baseAddress?.assumingMemoryBound(to: CChar.self),
                value.count, err)
        }
        self.count += 1
        var size: UInt64 = 0
        rocksdb_sstfilewriter_file_size(writer, &size)
        if size >= self.fileBytesMax { try self.finishFile() }
    }

    /// `put` of two arrays.
    public func put(_ key: [UInt8], _ value: [UInt8]) throws(RocksDBError) {
        var failure: RocksDBError?
        key.withUnsafeBytes { key in
            value.withUnsafeBytes { value in
                do throws(RocksDBError) {
                    try self.put(key, value)
                } catch {
                    failure = error
                }
            }
        }
        if let failure { throw failure }
    }

    /// Ingests every file written (moved into the database, not copied). The loader can go on
    /// taking greater keys afterwards.
    public func finish() throws(RocksDBError) {
        if self.writer != nil { try self.finishFile() }
        guard !self.files.isEmpty else { return }
        let options = rocksdb_ingestexternalfileoptions_create()!
        defer { rocksdb_ingestexternalfileoptions_destroy(options) }
        rocksdb_ingestexternalfileoptions_set_move_files(options, 1)
        let names = self.files.map { strdup($0) }
        defer { names.forEach { free($0) } }
        var pointers = names.map { UnsafePointer<CChar>($0) }
        try self.database.closed.withLock { closed throws(RocksDBError) in
            precondition(!closed, "SortedFileLoader.finish after the database was closed")
            // Odd while the files go in, so no pooled iterator spans the change (IteratorPool).
            self.database.unsequencedChanges.add(1, ordering: .sequentiallyConsistent)
            defer { self.database.unsequencedChanges.add(1, ordering: .sequentiallyConsistent) }
            try RocksDBError.check { err in
                rocksdb_ingest_external_file_cf(self.database.db, self.family.handle, &pointers, pointers.count, options, err)
            }
        }
        // Moved files are links in the database now; the names here go.
        for file in self.files { unlink(file) }
        self.files.removeAll()
    }

    private func openWriter() throws(RocksDBError) -> OpaquePointer {
        if let writer = self.writer { return writer }
        let options = self.database.familyOptions[self.family.name]!
        let writer = rocksdb_sstfilewriter_create(self.environment, options)!
        let path = self.path(self.filesMade)
        do {
            try RocksDBError.check { err in rocksdb_sstfilewriter_open(writer, path, err) }
        } catch {
            rocksdb_sstfilewriter_destroy(writer)
            throw error
        }
        self.filesMade += 1
        self.writer = writer
        return writer
    }

    private func finishFile() throws(RocksDBError) {
        guard let writer = self.writer else { return }
        self.writer = nil
        defer { rocksdb_sstfilewriter_destroy(writer) }
        let path = self.path(self.filesMade - 1)
        do {
            try RocksDBError.check { err in rocksdb_sstfilewriter_finish(writer, err) }
        } catch {
            unlink(path)
            throw error
        }
        self.files.append(path)
    }
}
