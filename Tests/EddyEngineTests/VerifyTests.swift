// `Engine.verify()`: healthy on fresh and used databases, and it detects damage made by writing
// to the RocksDB column families directly (with the engine closed): a leaf below a leaf, a
// garbage log entry, a tree leaf no log entry explains, and more.

import EddyEngine
import EddyModel
import EddyTesting
import EddyStorage
import EddyTree
import Foundation
import Testing

@Suite struct VerifyTests {
    @Test func freshDatabaseIsHealthy() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { engine.close() }
        let report = try engine.verify()
        #expect(report.isHealthy, "\(report)")
        #expect(report.problem == nil)
        #expect(report.leafCount == 0)
        #expect(report.logEntryCount == 0)
        #expect(report.lastLogID == nil)
        #expect(report.description.contains("OK"))
    }

    @Test func usedDatabaseIsHealthy() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let written = try await Self.populate(directory)
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { engine.close() }
        let report = try engine.verify()
        #expect(report.isHealthy, "\(report)")
        #expect(report.logEntryCount == written.count)
        #expect(report.lastLogID == written.last)
        #expect(report.leafCount == (try engine.readValue(.root)).leafCount)
    }

    /// Writes a small database covering every operation and closes it. Returns the log ids.
    static func populate(_ directory: TemporaryDirectory) async throws -> [LogID] {
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
        defer { engine.close() }
        var ids: [LogID] = []
        ids.append(try await engine.set(p("/a"), json(#"{"b":1,"c":{"d":"x","e":[1,2,3]},"é😀":true}"#)).committed!.logID)
        ids.append(try await engine.set(p("/leaf"), .number(5)).committed!.logID)
        ids.append(try await engine.push(p("/list"), json(#"{"t":{".sv":"timestamp"}}"#)).logID)
        ids.append(try await engine.update(p("/a"), [.init(path: p("c/d"), value: .null), .init(path: p("-1"), value: .number(-1))]).logID)
        ids.append(try await engine.set(p("/leaf/below"), .string("replaced")).committed!.logID)
        ids.append(try await engine.remove(p("/a/b")).committed!.logID)
        ids.append(try await engine.set(p("/n"), json(#"{".sv":{"increment":3}}"#)).committed!.logID)
        return ids
    }

    /// Opens the closed database's RocksDB directly, lets `damage` change it, then verifies it
    /// with a freshly opened engine and returns the report.
    static func verifyAfterDamage(
        _ directory: TemporaryDirectory, _ damage: (Database, ColumnFamily, ColumnFamily) throws -> Void
    ) throws -> VerifyReport {
        do {
            let database = try Database(path: directory.path, columnFamilies: ["tree", "index", "log", "meta", "priority"], options: StorageOptions())
            defer { database.close() }
            try damage(database, database.columnFamily("tree"), database.columnFamily("log"))
        }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { engine.close() }
        return try engine.verify()
    }

    @Test func detectsALeafBelowALeaf() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        _ = try await Self.populate(directory)
        let report = try Self.verifyAfterDamage(directory) { database, tree, _ in
            #expect(try database.get(tree, PathKeyEncoding.encode(p("/a/-1"))) != nil, "the leaf to damage exists")
            try database.put(tree, PathKeyEncoding.encode(p("/a/-1/child")), LeafEncoding.encode(.number(2)), durability: .sync)
        }
        let problem = try #require(report.problem, "\(report)")
        #expect(!report.isHealthy)
        #expect(problem.contains("/a/-1"), "\(problem)")
        #expect(problem.contains("descendant"), "\(problem)")
        #expect(report.description.contains("PROBLEM"))
    }

    @Test func detectsALeafBelowTheRootPrimitive() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        do {
            let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
            _ = try await engine.set(.root, .bool(true))
            engine.close()
        }
        let report = try Self.verifyAfterDamage(directory) { database, tree, _ in
            try database.put(tree, PathKeyEncoding.encode(p("/x")), LeafEncoding.encode(.bool(false)), durability: .sync)
        }
        #expect(report.problem?.contains("descendant") == true, "\(report)")
    }

    @Test func detectsGarbageInALogEntry() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let ids = try await Self.populate(directory)
        let victim = ids[2]
        let report = try Self.verifyAfterDamage(directory) { database, _, log in
            try database.put(log, Array(victim.rawValue.utf8), Array("garbage, not an entry".utf8), durability: .sync)
        }
        let problem = try #require(report.problem, "\(report)")
        #expect(problem.contains("log"), "\(problem)")
        #expect(problem.contains(victim.rawValue), "\(problem)")
    }

    @Test func detectsASingleFlippedByteInALogEntry() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let ids = try await Self.populate(directory)
        let victim = ids[3]
        let report = try Self.verifyAfterDamage(directory) { database, _, log in
            var bytes = try #require(try database.get(log, Array(victim.rawValue.utf8)))
            bytes[bytes.count / 2] ^= 0x04
            try database.put(log, Array(victim.rawValue.utf8), bytes, durability: .sync)
        }
        #expect(report.problem?.contains("checksum") == true, "\(report)")
    }

    @Test func detectsATreeLeafWithoutALogEntry() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        _ = try await Self.populate(directory)
        let report = try Self.verifyAfterDamage(directory) { database, tree, _ in
            try database.put(tree, PathKeyEncoding.encode(p("/stray/leaf")), LeafEncoding.encode(.string("no log")), durability: .sync)
        }
        let problem = try #require(report.problem, "\(report)")
        #expect(problem.contains("disagree"), "\(problem)")
    }

    @Test func detectsALogEntryWhoseChangeIsMissingFromTheTree() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        _ = try await Self.populate(directory)
        let report = try Self.verifyAfterDamage(directory) { database, tree, _ in
            let batch = WriteBatchWithIndex(database: database)
            batch.delete(tree, PathKeyEncoding.encode(p("/a/c/e/1")))
            try database.write(batch, durability: .sync)
        }
        #expect(report.problem?.contains("disagree") == true, "\(report)")
    }

    @Test func detectsAChangedLeafValue() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        _ = try await Self.populate(directory)
        let report = try Self.verifyAfterDamage(directory) { database, tree, _ in
            try database.put(tree, PathKeyEncoding.encode(p("/n")), LeafEncoding.encode(.number(4)), durability: .sync)
        }
        #expect(report.problem?.contains("disagree") == true, "\(report)")
    }

    @Test func detectsMalformedTreeRecords() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        _ = try await Self.populate(directory)
        let badValue = try Self.verifyAfterDamage(directory) { database, tree, _ in
            try database.put(tree, PathKeyEncoding.encode(p("/n")), [0x09, 0x01], durability: .sync)
        }
        #expect(badValue.problem?.contains("/n") == true, "\(badValue)")
        let badKey = try Self.verifyAfterDamage(directory) { database, tree, _ in
            try database.put(tree, PathKeyEncoding.encode(p("/n")), LeafEncoding.encode(.number(3)), durability: .sync)
            try database.put(tree, [0x02, 0x61, 0x2E, 0x62, 0x00], LeafEncoding.encode(.number(1)), durability: .sync)  // key "a.b"
        }
        #expect(badKey.problem?.contains("tree") == true, "\(badKey)")
        let nonFinite = try Self.verifyAfterDamage(directory) { database, tree, _ in
            let batch = WriteBatchWithIndex(database: database)
            batch.delete(tree, [0x02, 0x61, 0x2E, 0x62, 0x00])
            try database.write(batch, durability: .sync)
            try database.put(tree, PathKeyEncoding.encode(p("/n")), [0x03] + withUnsafeBytes(of: Double.nan.bitPattern.littleEndian, Array.init), durability: .sync)
        }
        #expect(nonFinite.problem?.contains("non-finite") == true, "\(nonFinite)")
    }

    @Test func detectsBadLogKeys() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let ids = try await Self.populate(directory)
        // "!" sorts before every push-ID character, so the engine still opens.
        let report = try Self.verifyAfterDamage(directory) { database, _, log in
            let entry = try #require(try database.get(log, Array(ids[0].rawValue.utf8)))
            try database.put(log, Array("!not-a-push-id".utf8), entry, durability: .sync)
        }
        #expect(report.problem?.contains("not a push ID") == true, "\(report)")
    }

    @Test func detectsAnEntryCopiedOverAnother() async throws {
        // Entries carry no copy of their id, so a valid entry under another valid key decodes;
        // the replay must then disagree with the tree.
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let ids = try await Self.populate(directory)
        let report = try Self.verifyAfterDamage(directory) { database, _, log in
            let entry = try #require(try database.get(log, Array(ids[1].rawValue.utf8)))  // set /leaf = 5
            try database.put(log, Array(String(repeating: "-", count: 20).utf8), entry, durability: .sync)
            try database.put(log, Array(ids[4].rawValue.utf8), entry, durability: .sync)  // replaces "/leaf/below"
        }
        #expect(!report.isHealthy, "\(report)")
    }

    @Test func aLastLogKeyThatIsNotAPushIDStopsTheEngineFromOpening() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        _ = try await Self.populate(directory)
        do {
            let database = try Database(path: directory.path, columnFamilies: ["tree", "index", "log", "meta", "priority"], options: StorageOptions())
            defer { database.close() }
            try database.put(database.columnFamily("log"), Array("~zzz".utf8), [1, 2, 3], durability: .sync)
        }
        expectEddyErrorSync(.corruption, mentioning: ["~zzz", "push ID"]) {
            _ = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        }
    }

    @Test func anUnknownStorageFormatIsRefusedAtOpen() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        _ = try await Self.populate(directory)
        do {
            let database = try Database(path: directory.path, columnFamilies: ["tree", "index", "log", "meta", "priority"], options: StorageOptions())
            defer { database.close() }
            try database.put(database.columnFamily("meta"), Array("format-version".utf8), [StorageFormat.version + 1], durability: .sync)
        }
        expectEddyErrorSync(.corruption, mentioning: ["format \(StorageFormat.version + 1)", "\(StorageFormat.version)"]) {
            _ = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        }
    }

    @Test func aVersionOneDatabaseIsUpgradedAtOpen() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let ids = try await Self.populate(directory)
        do {
            let database = try Database(path: directory.path, columnFamilies: ["tree", "index", "log", "meta", "priority"], options: StorageOptions())
            defer { database.close() }
            try database.put(database.columnFamily("meta"), Array("format-version".utf8), [1], durability: .sync)
        }
        do {
            let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
            defer { engine.close() }
            let report = try engine.verify()
            #expect(report.isHealthy, "\(report)")
            #expect(report.logEntryCount == ids.count)
        }
        let database = try Database(path: directory.path, columnFamilies: ["tree", "index", "log", "meta", "priority"], options: StorageOptions())
        defer { database.close() }
        #expect(try database.get(database.columnFamily("meta"), Array("format-version".utf8)) == [StorageFormat.version])
    }

    @Test func aDataDirectoryThatIsAFileIsAnIOError() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        #expect(FileManager.default.createFile(atPath: directory.path, contents: Array("not a directory".utf8).withUnsafeBytes { Data($0) }))
        expectEddyErrorSync(.io, mentioning: [directory.path]) {
            _ = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        }
    }
}
