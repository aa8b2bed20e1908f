// Real RocksDB in temp directories: one `BlockCache` shared by two databases holds the blocks
// both read, and its capacity bounds them together.

import EddyStorage
import Foundation
import Testing

@Suite struct BlockCacheTests {
    /// A database in a fresh directory holding `count` keys of 1 KiB values (incompressible),
    /// flushed to SST files so that reads go through the block cache.
    private func filledDatabase(_ options: StorageOptions, count: Int, seed: UInt64) throws -> (Database, String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("eddy-cache-\(UUID().uuidString)").path
        let db = try Database(path: path, columnFamilies: ["a"], options: options)
        var random = seed
        for i in 0..<count {
            let value = (0..<1024).map { _ -> UInt8 in
                random = random &* 6364136223846793005 &+ 1442695040888963407
                return UInt8(truncatingIfNeeded: random >> 33)
            }
            try db.put(db.columnFamily("a"), Array(String(format: "k%06d", i).utf8), value, durability: .buffered)
        }
        try db.flushMemtables()
        return (db, path)
    }

    private func readAll(_ db: Database, count: Int) throws {
        for i in 0..<count {
            #expect(try db.get(db.columnFamily("a"), Array(String(format: "k%06d", i).utf8))?.count == 1024)
        }
    }

    /// Calls `body` with two databases of `count` keys each, opened with one shared `cache`,
    /// and removes them afterwards.
    private func withTwoDatabases(sharing cache: BlockCache, count: Int, _ body: (Database, Database) throws -> Void) throws {
        var options = StorageOptions()
        options.blockCache = cache
        let (first, firstPath) = try self.filledDatabase(options, count: count, seed: 1)
        let (second, secondPath) = try self.filledDatabase(options, count: count, seed: 2)
        defer {
            first.close()
            second.close()
            try? FileManager.default.removeItem(atPath: firstPath)
            try? FileManager.default.removeItem(atPath: secondPath)
        }
        try body(first, second)
    }

    @Test func twoDatabasesReadThroughOneCache() throws {
        let cache = BlockCache(capacityBytes: 64 << 20)
        try self.withTwoDatabases(sharing: cache, count: 2_000) { first, second in
            #expect(first.blockCache === cache && second.blockCache === cache)
            try self.readAll(first, count: 2_000)
            let afterFirst = cache.usedBytes
            #expect(afterFirst >= 2_000 * 1024, "the first database's blocks are in the shared cache: \(afterFirst) bytes")
            try self.readAll(second, count: 2_000)
            let afterSecond = cache.usedBytes
            #expect(
                afterSecond >= afterFirst + 2_000 * 1024,
                "the second database's blocks join the same cache: \(afterFirst) then \(afterSecond) bytes")
        }
    }

    @Test func theSharedCapacityBoundsEveryDatabaseTogether() throws {
        // 4 MiB of blocks in each of two databases, read through a 1 MiB cache.
        let cache = BlockCache(capacityBytes: 1 << 20)
        try self.withTwoDatabases(sharing: cache, count: 4_096) { first, second in
            try self.readAll(first, count: 4_096)
            try self.readAll(second, count: 4_096)
            #expect(cache.capacityBytes == 1 << 20)
            #expect(cache.usedBytes > 0)
            #expect(cache.usedBytes <= cache.capacityBytes, "\(cache.usedBytes) bytes held in a cache of \(cache.capacityBytes)")
        }
    }

    @Test func aDatabaseWithoutASharedCacheHasItsOwn() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("eddy-cache-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = StorageOptions()
        options.blockCacheBytes = 8 << 20
        let db = try Database(path: path, columnFamilies: ["a"], options: options)
        defer { db.close() }
        #expect(db.blockCache.capacityBytes == 8 << 20)
    }
}
