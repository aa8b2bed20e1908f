// When a replica checked at its start is copied from a snapshot instead of replaying what it
// lacks (`Engine.replicaCatchesUpSoonerFromSnapshot`): at least `entriesMin` entries behind and
// at least one entry per 16 records a snapshot would copy; counted exactly up to `countMax`,
// estimated from the log's files past it.

@testable import EddyEngine
import EddyModel
import EddyStorage
import EddyTree
import Testing

@Suite struct SnapshotOrReplayTests {
    @Test func aSnapshotWhenTheEntriesBehindAreManyNextToTheRecordsItCopies() async throws {
        try await withEngine { engine in
            // 3,000 leaves in one entry: some 3,000 records to copy whatever the lag.
            var big: [String: Value] = [:]
            for i in 0..<3000 { big["c\(i)"] = .number(Double(i)) }
            let bigID = try await engine.set(p("/big"), .object(big)).committed!.logID
            var ids: [LogID] = []
            for i in 0..<300 { ids.append(try await engine.set(p("/s/k\(i)"), .number(Double(i))).committed!.logID) }
            // About 3,600 records: 225 entries behind are needed.
            #expect(engine.replicaCatchesUpSoonerFromSnapshot(after: bigID, entriesMin: 100), "300 behind")
            #expect(!engine.replicaCatchesUpSoonerFromSnapshot(after: ids[99], entriesMin: 100), "200 behind: replay")
            #expect(!engine.replicaCatchesUpSoonerFromSnapshot(after: bigID, entriesMin: 301), "below the threshold")
            #expect(!engine.replicaCatchesUpSoonerFromSnapshot(after: bigID, entriesMin: 0), "0 turns it off")
            #expect(!engine.replicaCatchesUpSoonerFromSnapshot(after: ids[299], entriesMin: 1), "not behind")
            #expect(!engine.replicaCatchesUpSoonerFromSnapshot(after: bigID, entriesMin: 100, countMax: 50), "nothing in files to estimate from")

            // Past `countMax`, the share of the log's files after the id decides.
            try engine.database.flush(engine.database.columnFamily(ColumnFamilies.log), wait: true)
            try engine.database.flush(engine.database.columnFamily(ColumnFamilies.tree), wait: true)
            #expect(engine.replicaCatchesUpSoonerFromSnapshot(after: bigID, entriesMin: 100, countMax: 50), "about 300 behind in the files")
            #expect(!engine.replicaCatchesUpSoonerFromSnapshot(after: ids[149], entriesMin: 100, countMax: 50), "about 150 behind in the files")
        }
    }
}
