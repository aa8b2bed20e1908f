// Snapshot chunks round-trip (records of every family, empty values, values that compress), and
// a chunk with any byte changed is either refused or (a zstd header bit that does not change the
// data) decodes to exactly the same records: changed data is never accepted.

import EddyEngine
import EddyProtocol
import Testing

@testable import EddyReplication

@Suite struct SnapshotChunkTests {
    let records: [EngineSnapshotReader.Record] = (0..<40).map { i in
        EngineSnapshotReader.Record(
            family: UInt8(i % 4), key: Array("key-\(i)".utf8), value: i == 3 ? [] : Array(repeating: UInt8(i), count: i * 50))
    }

    @Test func roundTrips() throws {
        let payload = SnapshotChunk.encode(self.records)
        let decoded = try SnapshotChunk.decode(payload)
        #expect(decoded.map(\.family) == self.records.map(\.family))
        #expect(decoded.map(\.key) == self.records.map(\.key))
        #expect(decoded.map(\.value) == self.records.map(\.value))
        #expect(payload.count < self.records.reduce(0) { $0 + $1.value.count } / 4, "repetitive values compress")
    }

    @Test func aChangedByteNeverYieldsChangedRecords() {
        let payload = SnapshotChunk.encode(self.records)
        var refused = 0
        for i in payload.indices {
            var corrupted = payload
            corrupted[i] ^= 0x01
            do {
                let decoded = try SnapshotChunk.decode(corrupted)
                let same = decoded.map(\.key) == self.records.map(\.key) && decoded.map(\.value) == self.records.map(\.value)
                #expect(same, "byte \(i) of \(payload.count) changed the records without being refused")
            } catch {
                refused += 1
            }
        }
        #expect(refused >= payload.count - 4, "\(refused) of \(payload.count) changed bytes refused")
    }
}
