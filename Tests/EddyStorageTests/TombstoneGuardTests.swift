// A guarded iterator (a write batch's) over many tombstones: a move that would walk more than
// `TombstoneGuard.skippedKeysMax` of them is redone on a fallback (`fallbacksMade` counts them),
// and every answer equals what an unguarded iterator over the same state reads, forward,
// backward, scoped or not, with the batch's own changes on top.

import EddyStorage
import EddyTesting
import Foundation
import Testing

struct TombstoneGuardTests {
    /// "a0", then `deleted` removed keys "b00000"..., then "c0", "c1"; the batch adds "b99999x".
    private func populate(_ db: Database, deleted: Int) throws -> WriteBatchWithIndex {
        let t = db.columnFamily("t")
        let fill = WriteBatchWithIndex(database: db)
        for i in 0..<deleted { fill.put(t, Array(String(format: "b%05d", i).utf8), [1]) }
        for key in ["a0", "c0", "c1"] { fill.put(t, Array(key.utf8), [2]) }
        try db.write(fill, durability: .buffered)
        let remove = WriteBatchWithIndex(database: db)
        for i in 0..<deleted { remove.delete(t, Array(String(format: "b%05d", i).utf8)) }
        try db.write(remove, durability: .buffered)
        return WriteBatchWithIndex(database: db)
    }

    private func keys(_ iterator: Iterator, from key: String, within scope: String?) -> [String] {
        iterator.seek(Array(key.utf8), within: scope.map { Array($0.utf8) })
        var seen: [String] = []
        while iterator.isValid {
            let k = String(decoding: iterator.key, as: UTF8.self)
            if let scope, !k.hasPrefix(scope) { break }
            seen.append(k)
            iterator.next()
        }
        return seen
    }

    @Test func movesOverManyTombstonesAreRedoneAndAnswerTheSame() throws {
        try withDatabase(["t"]) { db in
            let t = db.columnFamily("t")
            let batch = try self.populate(db, deleted: 20 * Int(TombstoneGuard.skippedKeysMax))
            batch.put(t, Array("b99999x".utf8), [3])
            let guarded = batch.makeIterator(t)
            // A scoped seek into the removed range: nothing there, found without the walk.
            #expect(self.keys(guarded, from: "b00100", within: "b00100").isEmpty)
            #expect(guarded.fallbacksMade == 1)
            #expect(throws: Never.self) { try guarded.checkError() }
            // Later scoped seeks go straight to a bounded fallback.
            #expect(self.keys(guarded, from: "b00200", within: "b002").isEmpty)
            #expect(guarded.fallbacksMade == 2)
            // Unscoped: the walk happens (on the fallback) and finds what lies beyond.
            #expect(self.keys(guarded, from: "b", within: nil) == ["b99999x", "c0", "c1"])
            // A step from a0 over every tombstone resumes after a0.
            #expect(self.keys(guarded, from: "a0", within: nil) == ["a0", "b99999x", "c0", "c1"])
            guarded.seekToLast()
            var backward: [String] = []
            while guarded.isValid {
                backward.append(String(decoding: guarded.key, as: UTF8.self))
                guarded.previous()
            }
            #expect(backward == ["c1", "c0", "b99999x", "a0"])
            #expect(throws: Never.self) { try guarded.checkError() }
            // The same reads through an unguarded iterator of the database (batch not written).
            let plain = db.makeIterator(t)
            #expect(self.keys(plain, from: "a0", within: nil) == ["a0", "c0", "c1"])
        }
    }

    @Test func fewTombstonesNeedNoFallback() throws {
        try withDatabase(["t"]) { db in
            let t = db.columnFamily("t")
            let batch = try self.populate(db, deleted: 10)
            let guarded = batch.makeIterator(t)
            #expect(self.keys(guarded, from: "a0", within: nil) == ["a0", "c0", "c1"])
            #expect(self.keys(guarded, from: "b", within: "b").isEmpty)
            #expect(guarded.fallbacksMade == 0)
        }
    }

    @Test func endOfAPrefixIsItsSuccessor() {
        #expect(TombstoneGuard.end(of: [1, 2]) == [1, 3])
        #expect(TombstoneGuard.end(of: [1, 0xFF]) == [2])
        #expect(TombstoneGuard.end(of: [0xFF, 0xFF]) == nil)
        #expect(TombstoneGuard.end(of: []) == nil)
    }
}

/// Random puts and deletes in the database and in a batch on top, then random scoped and
/// unscoped seeks and steps: a guarded iterator that falls back after 2 skipped records reads
/// exactly what an iterator that never stops reads. Rerun a failure with `EDDY_SEED=<seed>`.
struct TombstoneGuardModelTests {
    @Test func guardedReadsEqualUnguardedReads() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        print("TombstoneGuardModelTests: EDDY_SEED=\(seed)")
        var g = SeededGenerator(seed: seed)
        func randomKey() -> [UInt8] { (0..<g.int(in: 1...4)).map { _ in g.element(of: Array("abc".utf8)) } }
        try withDatabase(["t"]) { db in
            let t = db.columnFamily("t")
            for _ in 0..<30 {
                let round = WriteBatchWithIndex(database: db)
                for _ in 0..<40 {
                    if g.chance(1, in: 3) { round.delete(t, randomKey()) } else { round.put(t, randomKey(), [UInt8(g.int(in: 0..<256))]) }
                }
                try db.write(round, durability: .buffered)
            }
            var fallbacks = 0
            defer { #expect(fallbacks > 0, "seed \(seed): the fallbacks were exercised") }
            let guardedBatch = WriteBatchWithIndex(database: db, skippedKeysMax: 2)
            let plainBatch = WriteBatchWithIndex(database: db, skippedKeysMax: 0)  // 0: never stops
            for step in 0..<400 {
                if g.chance(1, in: 4) {
                    let key = randomKey()
                    if g.chance(1, in: 3) {
                        guardedBatch.delete(t, key)
                        plainBatch.delete(t, key)
                    } else {
                        let value = [UInt8(g.int(in: 0..<256))]
                        guardedBatch.put(t, key, value)
                        plainBatch.put(t, key, value)
                    }
                }
                let guarded = guardedBatch.makeIterator(t)
                let plain = plainBatch.makeIterator(t)
                for _ in 0..<3 {
                    let key = randomKey()
                    let scope: [UInt8]? = g.bool() ? Array(key.prefix(g.int(in: 1...key.count))) : nil
                    let backward = scope == nil && g.chance(1, in: 3)
                    if backward {
                        guarded.seekForPrev(key)
                        plain.seekForPrev(key)
                    } else {
                        guarded.seek(key, within: scope)
                        plain.seek(key)
                    }
                    var seen: [[UInt8]] = []
                    var expected: [[UInt8]] = []
                    while guarded.isValid, scope.map({ guarded.keyHasPrefix($0) }) ?? true, seen.count < 20 {
                        seen.append(guarded.key + [0] + guarded.value)
                        if backward { guarded.previous() } else { guarded.next() }
                    }
                    while plain.isValid, scope.map({ plain.keyHasPrefix($0) }) ?? true, expected.count < 20 {
                        expected.append(plain.key + [0] + plain.value)
                        if backward { plain.previous() } else { plain.next() }
                    }
                    #expect(seen == expected, "seed \(seed) step \(step) key \(key) scope \(String(describing: scope)) backward \(backward)")
                    #expect(throws: Never.self) { try guarded.checkError() }
                    if seen != expected { return }
                }
                fallbacks += guarded.fallbacksMade
            }
        }
    }
}
