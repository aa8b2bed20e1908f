// Real RocksDB in temp directories: the wrapper's contracts that the engine relies on.

import EddyStorage
import Foundation
import Testing

private func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

@Suite struct DatabaseTests {
    @Test func putGetAcrossColumnFamiliesAndReopen() throws {
        let path = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            let db = try Database(path: path, columnFamilies: ["a", "b"], options: StorageOptions())
            try db.put(db.columnFamily("a"), bytes("k"), bytes("in a"), durability: .sync)
            try db.put(db.columnFamily("b"), bytes("k"), bytes("in b"), durability: .sync)
            #expect(try db.get(db.columnFamily("a"), bytes("k")) == bytes("in a"))
            #expect(try db.get(db.columnFamily("b"), bytes("missing")) == nil)
            db.close()
            db.close()  // idempotent
        }
        let reopened = try Database(path: path, columnFamilies: ["a", "b"], options: StorageOptions())
        #expect(try reopened.get(reopened.columnFamily("b"), bytes("k")) == bytes("in b"))
    }

    /// Disk blocks allocated to the files directly in `path`, in bytes (`st_blocks` counts
    /// space reserved ahead of the file's end, which the file's size does not).
    private func allocatedBytes(_ path: String) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: path).reduce(0) { total, name in
            var status = stat()
            guard stat(path + "/" + name, &status) == 0 else { return total }
            return total + Int(status.st_blocks) * 512
        }
    }

    @Test func aDatabaseHoldingOneValueTakesLittleDisk() throws {
        // With RocksDB's preallocation a 64 MiB memtable made the write-ahead log alone reserve
        // 71 MiB; the files must take the space they hold.
        try withDatabase(["a", "b"]) { db in
            try db.put(db.columnFamily("a"), bytes("k"), bytes("v"), durability: .sync)
            let allocated = try allocatedBytes(db.path)
            #expect(allocated < 4 * 1024 * 1024, "\(allocated) bytes allocated in \(db.path)")
        }
        var preallocating = StorageOptions()
        preallocating.preallocateFiles = true
        let path = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let db = try Database(path: path, columnFamilies: ["a"], options: preallocating)
        defer { db.close() }
        try db.put(db.columnFamily("a"), bytes("k"), bytes("v"), durability: .sync)
        #expect(try allocatedBytes(path) > 64 * 1024 * 1024, "the option reaches RocksDB")
    }

    @Test func plainWriteBatchAppliesPutsDeletesAndRangeDeletesAtomically() throws {
        try withDatabase(["a", "b"]) { db in
            let a = db.columnFamily("a")
            for k in ["k1", "k2", "k3", "x"] { try db.put(a, bytes(k), bytes("old"), durability: .buffered) }
            let batch = WriteBatch()
            batch.deleteRange(a, from: bytes("k1"), to: bytes("k3"))  // k1, k2; not k3
            batch.delete(a, bytes("x"))
            batch.put(db.columnFamily("b"), bytes("new"), bytes("v"))
            #expect(batch.count == 3)
            #expect(try db.get(a, bytes("k1")) == bytes("old"), "nothing applies before the write")
            try db.write(batch, durability: .sync)
            #expect(try db.get(a, bytes("k1")) == nil)
            #expect(try db.get(a, bytes("k2")) == nil)
            #expect(try db.get(a, bytes("k3")) == bytes("old"))
            #expect(try db.get(a, bytes("x")) == nil)
            #expect(try db.get(db.columnFamily("b"), bytes("new")) == bytes("v"))
            batch.clear()
            #expect(batch.count == 0)
        }
    }

    @Test func secondOpenOfTheSameDirectoryReportsTheLock() throws {
        try withDatabase(["a"]) { db in
            do throws(RocksDBError) {
                _ = try Database(path: db.path, columnFamilies: ["a"], options: StorageOptions())
                Issue.record("second open succeeded")
            } catch {
                #expect(error.isLockHeld, "\(error)")
            }
        }
    }

    @Test func writeBatchReadsItsOwnChangesAndCommitsAtomically() throws {
        try withDatabase(["t"]) { db in
            let t = db.columnFamily("t")
            try db.put(t, bytes("a"), bytes("1"), durability: .sync)
            try db.put(t, bytes("c"), bytes("3"), durability: .sync)
            let batch = WriteBatchWithIndex(database: db)
            batch.put(t, bytes("b"), bytes("2"))
            batch.delete(t, bytes("a"))
            #expect(try batch.get(t, bytes("b")) == bytes("2"))
            #expect(try batch.get(t, bytes("a")) == nil)
            #expect(try db.get(t, bytes("b")) == nil, "nothing is visible before the write")
            let iterator = batch.makeIterator(t)
            iterator.seekToFirst()
            var seen: [String] = []
            while iterator.isValid {
                seen.append(String(decoding: iterator.key, as: UTF8.self))
                iterator.next()
            }
            #expect(seen == ["b", "c"])
            try db.write(batch, durability: .sync)
            #expect(try db.get(t, bytes("a")) == nil)
            #expect(try db.get(t, bytes("b")) == bytes("2"))
        }
    }

    @Test func aPlainCopyOfABatchWithIndexKeepsItsChangesInOrderUnderLaterOnes() throws {
        try withDatabase(["t", "u"]) { db in
            let t = db.columnFamily("t")
            let u = db.columnFamily("u")
            try db.put(t, bytes("gone"), bytes("0"), durability: .sync)
            let batch = WriteBatchWithIndex(database: db)
            batch.put(t, bytes("a"), bytes("1"))
            batch.put(t, bytes("a"), bytes("2"))  // overwrites in the batch's index
            batch.delete(t, bytes("gone"))
            batch.put(u, bytes("replaced"), bytes("batch"))
            batch.put(u, bytes("removed"), bytes("batch"))
            batch.setSavePoint()
            batch.put(t, bytes("rolled back"), bytes("x"))
            try batch.rollbackToSavePoint()
            let plain = WriteBatch(copying: batch)
            #expect(plain.count == batch.count)
            plain.put(u, bytes("replaced"), bytes("copy"))  // later than the batch's change
            plain.delete(u, bytes("removed"))
            plain.put(u, bytes("added"), bytes("copy"))
            batch.put(t, bytes("batch only"), bytes("y"))  // the copy does not follow the batch
            #expect(try db.get(t, bytes("a")) == nil, "nothing applies before the write")
            try db.write(plain, durability: .sync)
            #expect(try db.get(t, bytes("a")) == bytes("2"))
            #expect(try db.get(t, bytes("gone")) == nil)
            #expect(try db.get(t, bytes("rolled back")) == nil)
            #expect(try db.get(t, bytes("batch only")) == nil)
            #expect(try db.get(u, bytes("replaced")) == bytes("copy"))
            #expect(try db.get(u, bytes("removed")) == nil)
            #expect(try db.get(u, bytes("added")) == bytes("copy"))
        }
    }

    @Test func savePointRollsBackOnlyLaterChanges() throws {
        try withDatabase(["t"]) { db in
            let t = db.columnFamily("t")
            let batch = WriteBatchWithIndex(database: db)
            batch.put(t, bytes("kept"), bytes("1"))
            batch.setSavePoint()
            batch.put(t, bytes("dropped"), bytes("2"))
            try batch.rollbackToSavePoint()
            #expect(batch.count == 1)
            try db.write(batch, durability: .sync)
            #expect(try db.get(t, bytes("kept")) == bytes("1"))
            #expect(try db.get(t, bytes("dropped")) == nil)
        }
    }

    @Test func snapshotIgnoresLaterWrites() throws {
        try withDatabase(["t"]) { db in
            let t = db.columnFamily("t")
            try db.put(t, bytes("k"), bytes("old"), durability: .sync)
            let snapshot = db.makeSnapshot()
            try db.put(t, bytes("k"), bytes("new"), durability: .sync)
            #expect(try db.get(t, bytes("k"), snapshot: snapshot) == bytes("old"))
            let iterator = db.makeIterator(t, snapshot: snapshot)
            iterator.seek(bytes("k"))
            #expect(iterator.isValid && iterator.value == bytes("old"))
            #expect(try db.get(t, bytes("k")) == bytes("new"))
        }
    }

    @Test func iteratorSeeksPrefixesAndBackwards() throws {
        try withDatabase(["t"]) { db in
            let t = db.columnFamily("t")
            for k in ["a/1", "a/2", "b/1"] { try db.put(t, bytes(k), bytes(k), durability: .noWAL) }
            let iterator = db.makeIterator(t)
            iterator.seek(bytes("a/"))
            #expect(iterator.keyHasPrefix(bytes("a/")))
            iterator.seekToLast()
            #expect(iterator.key == bytes("b/1"))
            iterator.seekForPrev(bytes("a/9"))
            #expect(iterator.key == bytes("a/2"))
            iterator.previous()
            #expect(iterator.key == bytes("a/1"))
            iterator.previous()
            #expect(!iterator.isValid)
            try iterator.checkError()
        }
    }

    @Test func noWALWritesSurviveAnExplicitFlush() throws {
        let path = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            let db = try Database(path: path, columnFamilies: ["t"], options: StorageOptions())
            try db.put(db.columnFamily("t"), bytes("k"), bytes("v"), durability: .noWAL)
            try db.flushMemtables()
            try db.flushWAL(sync: true)
            db.close()
        }
        let db = try Database(path: path, columnFamilies: ["t"], options: StorageOptions())
        defer { db.close() }
        #expect(try db.get(db.columnFamily("t"), bytes("k")) == bytes("v"))
    }

    @Test func errorCodesComeFromTheStatusPrefix() {
        // The only conversion point: a missing directory with create_if_missing off.
        var options = StorageOptions()
        options.createIfMissing = false
        do {
            _ = try Database(path: temporaryDirectory(), columnFamilies: ["t"], options: options)
            Issue.record("opened a missing database")
        } catch {
            #expect(error.code == .invalidArgument, "\(error)")
            #expect(error.message.contains("does not exist"), "\(error)")
        }
    }
}

@Suite struct BlockSizeTests {
    /// The same records in two families, one with 16 KiB data blocks: its SST file has about a
    /// quarter as many blocks (RocksDB's aggregated table properties count them).
    @Test func aFamilysBlockSizeAppliesToItsFiles() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("eddy-block-size-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = StorageOptions()
        options.blockBytesByFamily = ["large": 16 << 10]
        let db = try Database(path: path, columnFamilies: ["small", "large"], options: options)
        defer { db.close() }
        for name in ["small", "large"] {
            let family = db.columnFamily(name)
            for i in 0..<20_000 {
                // Random bytes: compression does not change the block count much.
                let value = (0..<100).map { _ in UInt8.random(in: 0...255) }
                try db.put(family, Array(String(format: "key-%08d", i).utf8), value, durability: .noWAL)
            }
            try db.flush(family, wait: true)
        }
        func dataBlocks(_ name: String) throws -> Int {
            let text = try #require(db.property("rocksdb.aggregated-table-properties", of: db.columnFamily(name)))
            let field = try #require(text.split(separator: ";").first { $0.contains("# data blocks") }, "\(text)")
            return try #require(Int(field.split(separator: "=").last!.trimmingCharacters(in: .whitespaces)))
        }
        let small = try dataBlocks("small")
        let large = try dataBlocks("large")
        #expect(small > 400 && large * 3 < small && large * 5 > small, "data blocks: 4 KiB \(small), 16 KiB \(large)")
    }
}
