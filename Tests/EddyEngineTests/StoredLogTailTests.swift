// `readStoredLogTail`: the log server's read of what a follower has not been sent yet. It stops
// at the limits like `readStoredLogEntries` and says whether it reached the newest durable entry
// (`drained`): the log server stops reading on that, so a wrong `true` would leave entries
// unsent until the next commit.

import EddyEngine
import EddyModel
import EddyTesting
import Testing

@Suite struct StoredLogTailTests {
    @Test func aReadSaysWhetherItReachedTheNewestDurableEntry() async throws {
        try await withEngine(durability: .sync) { engine in try await self.check(engine) }
    }

    private func check(_ engine: Engine) async throws {
        let empty = try engine.readStoredLogTail(after: nil, limit: 10, bytesMax: 1 << 20)
        #expect(empty.entries.isEmpty && empty.drained)
        for n in 0..<5 { _ = try await engine.set(p("/n"), .number(Double(n))) }
        let ids = try engine.readStoredLogEntries(after: nil, limit: 100, bytesMax: 1 << 20).map(\.id)
        #expect(ids.count == 5)

        let all = try engine.readStoredLogTail(after: nil, limit: 10, bytesMax: 1 << 20)
        #expect(all.entries.map(\.id) == ids && all.drained)
        // Stopped by the limit on the newest entry: nothing is left, so drained.
        let exactly = try engine.readStoredLogTail(after: nil, limit: 5, bytesMax: 1 << 20)
        #expect(exactly.entries.map(\.id) == ids && exactly.drained)
        // Stopped by the limit or the byte bound before it: not drained.
        let first3 = try engine.readStoredLogTail(after: nil, limit: 3, bytesMax: 1 << 20)
        #expect(first3.entries.map(\.id) == Array(ids.prefix(3)) && !first3.drained)
        let oneByBytes = try engine.readStoredLogTail(after: ids[1], limit: 10, bytesMax: 1)
        #expect(oneByBytes.entries.map(\.id) == [ids[2]] && !oneByBytes.drained)
        let rest = try engine.readStoredLogTail(after: ids[2], limit: 10, bytesMax: 1 << 20)
        #expect(rest.entries.map(\.id) == Array(ids.suffix(2)) && rest.drained)
        let none = try engine.readStoredLogTail(after: ids[4], limit: 10, bytesMax: 1 << 20)
        #expect(none.entries.isEmpty && none.drained)
    }
}
