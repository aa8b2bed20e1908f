// The iterator pool against real RocksDB: an iterator over the newest state is reused only
// while nothing changed since it was made (a write or an ingest changes the view, and a read
// after either sees it), the pool keeps at most its capacity, and closing the database with
// iterators idle frees them first.

import EddyStorage
import Foundation
import Testing

private func read(_ iterator: Iterator, _ key: String) -> String? {
    iterator.seek(Array(key.utf8))
    guard iterator.isValid, iterator.key == Array(key.utf8) else { return nil }
    return String(decoding: iterator.value, as: UTF8.self)
}

@Suite struct IteratorPoolTests {
    @Test func aReleasedIteratorServesTheNextReadOnlyUntilTheDatabaseChanges() throws {
        try withDatabase(["a", "b"]) { db in
            let a = db.columnFamily("a")
            try db.put(a, Array("k".utf8), Array("1".utf8), durability: .buffered)

            var first: Iterator? = db.makeCurrentIterator(a)
            let view = try #require(first?.view)
            #expect(read(first!, "k") == "1")
            first = nil
            #expect(db.idleIteratorCount == 1, "returned to the pool while current")
            var again: Iterator? = db.makeCurrentIterator(a)
            #expect(again?.view == view && db.idleIteratorCount == 0, "the idle one is taken")
            #expect(db.makeCurrentIterator(db.columnFamily("b"), at: view) != nil, "another family at the same view")
            #expect(read(again!, "k") == "1")
            #expect(db.idleIteratorCount == 1, "the other family's, released")

            try db.put(a, Array("k".utf8), Array("2".utf8), durability: .buffered)
            #expect(db.makeCurrentIterator(a, at: view) == nil, "a write moved the view")
            #expect(read(again!, "k") == "1", "an iterator keeps reading its own state")
            again = nil
            #expect(db.idleIteratorCount == 1, "stale when returned: destroyed, not pooled")
            let after = db.makeCurrentIterator(a)
            #expect(db.idleIteratorCount == 0, "the stale idle one is dropped on the next take")
            #expect(after.view != view)
            #expect(read(after, "k") == "2", "a read after the write sees it")
        }
    }

    @Test func anIngestMovesTheViewEvenWithoutASequenceNumber() throws {
        try withDatabase(["a"]) { db in
            let a = db.columnFamily("a")
            var before: Iterator? = db.makeCurrentIterator(a)
            let view = try #require(before?.view)
            #expect(read(before!, "x") == nil)
            before = nil
            #expect(db.idleIteratorCount == 1)
            // Nothing overlaps the file, so RocksDB ingests it at sequence 0 without taking a new one.
            let loader = SortedFileLoader(database: db, family: a, directory: db.path, fileBytesMax: 4 << 10)
            try loader.put(Array("x".utf8), Array("ingested".utf8))
            try loader.finish()
            #expect(db.currentView != view)
            let after = db.makeCurrentIterator(a)
            #expect(read(after, "x") == "ingested", "the idle iterator from before the ingest is not handed out")
        }
    }

    @Test func thePoolKeepsAtMostItsCapacityAndCloseFreesThem() throws {
        let path = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let db = try Database(path: path, columnFamilies: ["a"], options: StorageOptions())
        var many: [Iterator] = (0..<40).map { _ in db.makeCurrentIterator(db.columnFamily("a")) }
        #expect(db.idleIteratorCount == 0)
        many.removeAll()
        #expect(db.idleIteratorCount == 16)
        db.close()
        #expect(db.idleIteratorCount == 0)
    }
}
