// Memtable insert hints (`StorageOptions.memtableInsertHintPrefixBytesByFamily`): RocksDB takes
// the option (its OPTIONS file records it for exactly the named family), and a family with a
// hint holds what was written whatever the order: keys in order within a prefix, against it,
// at random, under many prefixes and few, shorter than the prefix, in batches and alone, with
// range deletions (which RocksDB 7.8 would file under the point keys' hints if their start
// were as long as the prefix), across memtable flushes and a reopen, all read back as a sorted
// model says. Rerun a failure with `EDDY_SEED=<seed>`.

import EddyStorage
import EddyTesting
import Foundation
import Testing

@Suite struct MemtableInsertHintTests {
    static func options() -> StorageOptions {
        var options = StorageOptions()
        options.memtableInsertHintPrefixBytesByFamily = ["hinted": 4]
        options.writeBufferBytesByFamily = ["hinted": 256 << 10]  // a few flushes on the way
        return options
    }

    @Test func theOptionIsRecordedForTheNamedFamilyOnly() throws {
        let path = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let db = try Database(path: path, columnFamilies: ["hinted", "plain"], options: Self.options())
        db.close()
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasPrefix("OPTIONS-") }.max())
        let text = try String(contentsOfFile: path + "/" + name, encoding: .utf8)
        // Sections: [CFOptions "name"] ... up to the next section.
        func section(_ family: String) -> String {
            guard let start = text.range(of: "[CFOptions \"\(family)\"]") else { return "" }
            let rest = text[start.upperBound...]
            let end = rest.range(of: "\n[CFOptions ")?.lowerBound ?? rest.endIndex
            return String(rest[..<end])
        }
        #expect(section("hinted").contains("memtable_insert_with_hint_prefix_extractor=rocksdb.FixedPrefix.4"))
        #expect(section("plain").contains("memtable_insert_with_hint_prefix_extractor=nullptr"))
    }

    @Test func aHintedFamilyHoldsWhatWasWrittenInAnyOrder() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        print("MemtableInsertHintTests: EDDY_SEED=\(seed)")
        var g = SeededGenerator(seed: seed)
        let path = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: path) }
        var model: [[UInt8]: [UInt8]] = [:]
        var db = try Database(path: path, columnFamilies: ["hinted"], options: Self.options())
        var family = db.columnFamily("hinted")
        for round in 0..<8 {
            // A run of keys: ascending, descending or random, under one of a few prefixes
            // or under a fresh one each.
            let prefixes = (0..<g.int(in: 1...40)).map { _ in (0..<g.int(in: 0...6)).map { _ in UInt8(g.int(in: 0...255)) } }
            var keys: [[UInt8]] = (0..<2000).map { _ in
                g.element(of: prefixes) + withUnsafeBytes(of: UInt64(g.int(in: 0...1_000_000)).bigEndian, Array.init)
            }
            switch g.int(in: 0..<3) {
            case 0: keys.sort { $0.lexicographicallyPrecedes($1) }
            case 1: keys.sort { $1.lexicographicallyPrecedes($0) }
            default: break
            }
            var at = 0
            while at < keys.count {
                let count = g.chance(1, in: 3) ? 1 : g.int(in: 2...60)
                let batch = WriteBatchWithIndex(database: db)
                for key in keys[at..<min(at + count, keys.count)] {
                    if g.chance(1, in: 10), let old = model.keys.randomElement(using: &g) {
                        batch.delete(family, old)
                        model[old] = nil
                    }
                    let value = Array("r\(round)-\(at)".utf8)
                    batch.put(family, key, value)
                    model[key] = value
                }
                try db.write(batch, durability: .buffered)
                at += count
                if g.chance(1, in: 8), let key = model.keys.randomElement(using: &g) {
                    // Every key under the first 1-3 bytes of a stored key (an index drop deletes
                    // from its 4-byte id under a 5-byte hint), up to just before the next start.
                    let first = Array(key.prefix(g.int(in: 1...3)))
                    var end = first
                    end.append(0xFF)
                    let ranges = WriteBatch()
                    ranges.deleteRange(family, from: first, to: end)
                    try db.write(ranges, durability: .buffered)
                    for key in model.keys where !key.lexicographicallyPrecedes(first) && key.lexicographicallyPrecedes(end) {
                        model[key] = nil
                    }
                }
            }
            if round == 3 {
                db.close()
                db = try Database(path: path, columnFamilies: ["hinted"], options: Self.options())
                family = db.columnFamily("hinted")
            }
            let iterator = db.makeIterator(family)
            iterator.seekToFirst()
            var read: [([UInt8], [UInt8])] = []
            while iterator.isValid {
                read.append((iterator.key, iterator.value))
                iterator.next()
            }
            let expected = model.sorted { $0.key.lexicographicallyPrecedes($1.key) }
            #expect(read.count == expected.count, "seed \(seed) round \(round)")
            #expect(read.map(\.0) == expected.map(\.key), "seed \(seed) round \(round): keys")
            #expect(read.map(\.1) == expected.map(\.value), "seed \(seed) round \(round): values")
        }
        db.close()
    }
}
