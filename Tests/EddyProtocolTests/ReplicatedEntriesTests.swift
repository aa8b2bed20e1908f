// The replication `entries` payload round-trips, and any single flipped byte (in an id, a
// length, the entry bytes or a checksum) is refused: nothing of such a frame may be applied.

import EddyProtocol
import Testing

@Suite struct ReplicatedEntriesTests {
    let entries: [(id: String, bytes: [UInt8])] = (0..<5).map { i in
        ("-P6wV8db9BjocInCeQ9\(i)", Array(repeating: UInt8(i), count: i * 7) + Array("entry \(i)".utf8))
    }

    @Test func roundTrips() throws {
        let decoded = try ReplicatedEntries.decode(ReplicatedEntries.encode(self.entries))
        #expect(decoded.map(\.id) == self.entries.map(\.id))
        #expect(decoded.map(\.bytes) == self.entries.map(\.bytes))
        #expect(try ReplicatedEntries.decode([]).isEmpty)
    }

    @Test func everyFlippedByteIsRefused() {
        let payload = ReplicatedEntries.encode(self.entries)
        for i in payload.indices {
            var corrupted = payload
            corrupted[i] ^= 0x20
            #expect(throws: ProtocolError.self, "byte \(i) of \(payload.count)") { try ReplicatedEntries.decode(corrupted) }
        }
    }
}
