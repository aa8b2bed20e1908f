// SortedFileLoader against real RocksDB: a load split over many files reads back exactly, with
// the family's own compression, and survives a reopen; a key out of order is refused; a load
// dropped before `finish` leaves no file behind and nothing in the database.

import EddyStorage
import Foundation
import Testing

private func key(_ i: Int) -> [UInt8] { Array(String(format: "key-%08d", i).utf8) }
private func value(_ i: Int) -> [UInt8] { Array("value \(i) ".utf8) + Array(repeating: UInt8(i % 251), count: i % 97) }

@Suite struct SortedFileLoaderTests {
    @Test func aLoadOverManyFilesReadsBackAfterAReopen() throws {
        let path = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = StorageOptions()
        options.lz4Families = ["b"]
        let count = 20_000
        do {
            let db = try Database(path: path, columnFamilies: ["a", "b"], options: options)
            defer { db.close() }
            // A few KiB per file: the load spans many files.
            let loader = SortedFileLoader(database: db, family: db.columnFamily("b"), directory: path, fileBytesMax: 16 << 10)
            for i in 0..<count { try loader.put(key(i), value(i)) }
            try loader.finish()
            #expect(loader.count == count)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasPrefix("load-") }
            #expect(leftovers.isEmpty, "the loader's own file names are gone after ingestion: \(leftovers)")
            #expect(try db.get(db.columnFamily("a"), key(1)) == nil, "another family is untouched")
        }
        let db = try Database(path: path, columnFamilies: ["a", "b"], options: options)
        defer { db.close() }
        let iterator = db.makeIterator(db.columnFamily("b"))
        iterator.seekToFirst()
        var i = 0
        while iterator.isValid {
            #expect(iterator.key == key(i) && iterator.value == value(i), "record \(i)")
            i += 1
            iterator.next()
        }
        #expect(i == count)
        let files = try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".sst") }
        #expect(files.count > 10, "\(files.count) SST files")
    }

    @Test func aKeyOutOfOrderIsRefusedAndADroppedLoadLeavesNothing() throws {
        try withDatabase(["a"]) { db in
            do {
                let loader = SortedFileLoader(database: db, family: db.columnFamily("a"), directory: db.path, fileBytesMax: 4 << 10)
                for i in 0..<2_000 { try loader.put(key(i), value(i)) }
                #expect(throws: RocksDBError.self) { try loader.put(key(5), value(5)) }
                #expect(throws: RocksDBError.self) { try loader.put(key(1_999), value(1_999)) }  // equal is out of order too
                // Dropped without `finish`: its files go, and nothing was ingested.
            }
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: db.path).filter { $0.hasPrefix("load-") }
            #expect(leftovers.isEmpty, "\(leftovers)")
            #expect(try db.get(db.columnFamily("a"), key(0)) == nil)
            let loader = SortedFileLoader(database: db, family: db.columnFamily("a"), directory: db.path)
            try loader.finish()  // nothing put: nothing to ingest, no error
            #expect(try db.get(db.columnFamily("a"), key(0)) == nil)
        }
    }
}
