// Real RocksDB in temp directories: a background compaction turns overlapping level-0 files
// into one sorted run without losing a key, and closing the database ends queued or running
// compactions before the handles are freed.

@testable import EddyStorage
import Foundation
import Synchronization
import Testing

@Suite struct CompactionTests {
    /// A database with `files` level-0 files that each span the whole key range (key i goes to
    /// file i % files), `count` keys of 200 incompressible bytes in all.
    private func overlappingFiles(files: Int, count: Int) throws -> (Database, String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("eddy-compact-\(UUID().uuidString)").path
        let db = try Database(path: path, columnFamilies: ["a"], options: StorageOptions())
        var random: UInt64 = 7
        for file in 0..<files {
            for i in stride(from: file, to: count, by: files) {
                let value = (0..<200).map { _ -> UInt8 in
                    random = random &* 6364136223846793005 &+ 1442695040888963407
                    return UInt8(truncatingIfNeeded: random >> 33)
                }
                try db.put(db.columnFamily("a"), Self.key(i), value, durability: .buffered)
            }
            try db.flush(db.columnFamily("a"), wait: true)
        }
        return (db, path)
    }

    private static func key(_ i: Int) -> [UInt8] { Array(String(format: "k%07d", i).utf8) }

    @Test func overlappingFilesBecomeOneSortedRun() throws {
        let (db, path) = try self.overlappingFiles(files: 3, count: 30_000)
        defer {
            db.close()
            try? FileManager.default.removeItem(atPath: path)
        }
        let family = db.columnFamily("a")
        #expect(db.property("rocksdb.num-files-at-level0", of: family) == "3")
        let done = DispatchSemaphore(value: 0)
        db.compactInBackground(family, from: Self.key(0), to: Self.key(30_000)) { _ in done.signal() }
        #expect(done.wait(timeout: .now() + 60) == .success, "the compaction finished")
        // It counts as pending until its completion handler has returned.
        for _ in 0..<1000 where db.backgroundCompactionsPending > 0 { usleep(1000) }
        #expect(db.backgroundCompactionsPending == 0)
        #expect(db.property("rocksdb.num-files-at-level0", of: family) == "0", "no level-0 file is left")
        var seen = 0
        do {
            let iterator = db.makeIterator(family)  // released before the database closes
            iterator.seekToFirst()
            while iterator.isValid {
                #expect(iterator.key == Self.key(seen))
                seen += 1
                iterator.next()
            }
        }
        #expect(seen == 30_000, "every key is still there, once, in order")
    }

    @Test func closeEndsQueuedCompactionsAndLosesNothing() throws {
        let (db, path) = try self.overlappingFiles(files: 3, count: 60_000)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let family = db.columnFamily("a")
        let completions = Mutex(0)
        for _ in 0..<4 {
            db.compactInBackground(family, from: Self.key(0), to: Self.key(60_000)) { _ in completions.withLock { $0 += 1 } }
        }
        db.close()  // must not free the handles under a running compaction
        #expect(db.backgroundCompactionsPending == 0, "close waited for every queued compaction")
        let finishedBeforeClose = completions.withLock { $0 }
        db.compactInBackground(family, from: Self.key(0), to: Self.key(60_000)) { _ in completions.withLock { $0 += 1 } }
        #expect(db.backgroundCompactionsPending == 0, "nothing is queued after close")
        #expect(completions.withLock { $0 } == finishedBeforeClose)
        let reopened = try Database(path: path, columnFamilies: ["a"], options: StorageOptions())
        defer { reopened.close() }
        for i in stride(from: 0, to: 60_000, by: 997) {
            #expect(try reopened.get(reopened.columnFamily("a"), Self.key(i))?.count == 200)
        }
        var count = 0
        do {
            let iterator = reopened.makeIterator(reopened.columnFamily("a"))
            iterator.seekToFirst()
            while iterator.isValid {
                count += 1
                iterator.next()
            }
        }
        #expect(count == 60_000)
    }
}

@Suite struct FamilyWriteBufferTests {
    /// A family with a memtable size of its own flushes when that fills; the others keep theirs.
    @Test func aFamilysOwnMemtableSizeFlushesAtThatSize() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("eddy-buffer-\(UUID().uuidString)").path
        var options = StorageOptions()
        options.writeBufferBytesByFamily = ["small": 1 << 20]
        let db = try Database(path: path, columnFamilies: ["small", "large"], options: options)
        defer {
            db.close()
            try? FileManager.default.removeItem(atPath: path)
        }
        var random: UInt64 = 3
        for i in 0..<6_000 {
            let value = (0..<1000).map { _ -> UInt8 in
                random = random &* 6364136223846793005 &+ 1442695040888963407
                return UInt8(truncatingIfNeeded: random >> 33)
            }
            let key = Array(String(format: "k%07d", i).utf8)
            try db.put(db.columnFamily("small"), key, value, durability: .buffered)
            try db.put(db.columnFamily("large"), key, value, durability: .buffered)
        }
        // About 6 MiB each: several 1 MiB memtables filled (flushed in the background); none of
        // the 64 MiB default.
        let files = { (family: String) in
            (0...6).compactMap { Int(db.property("rocksdb.num-files-at-level\($0)", of: db.columnFamily(family)) ?? "") }.reduce(0, +)
        }
        for _ in 0..<500 where files("small") < 2 { usleep(10_000) }
        let smallFiles = files("small")
        let largeFiles = files("large")
        #expect(smallFiles >= 2, "the 1 MiB family flushed on its own")
        #expect(largeFiles == 0, "the default family did not flush")
    }
}

@Suite struct BackgroundCompactionsBoundTests {
    /// The queue holds at most `pendingMax`: one more is refused while they wait, and admitted
    /// again once they ran.
    @Test func theQueueIsBounded() {
        let compactions = BackgroundCompactions()
        let release = DispatchSemaphore(value: 0)
        let ran = Mutex(0)
        #expect(compactions.start { release.wait() }, "the first one runs and blocks the queue")
        for _ in 1..<BackgroundCompactions.pendingMax {
            #expect(compactions.start { ran.withLock { $0 += 1 } })
        }
        #expect(compactions.pending == BackgroundCompactions.pendingMax)
        #expect(!compactions.start { ran.withLock { $0 += 1 } }, "one past pendingMax is refused")
        release.signal()
        for _ in 0..<1000 where compactions.pending > 0 { usleep(1000) }
        #expect(ran.withLock { $0 } == BackgroundCompactions.pendingMax - 1, "every admitted one ran, the refused one did not")
        #expect(compactions.start {}, "admitted again once the queue drained")
        compactions.stop {}
        #expect(!compactions.start {}, "refused once stopped")
    }
}
