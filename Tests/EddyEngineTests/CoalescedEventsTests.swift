// Listeners that take the live entries of a commit group in one batch (`coalescesEntries`): they
// hear exactly the events a per-entry listener hears, in the same order, only cut into fewer
// batches; every batch is in log order; a write that silences some of a window's listeners
// starts a new batch, so each listener still gets every entry it hears in log order.

import EddyEngine
import EddyModel
import EddyTesting
import Testing

@Suite struct CoalescedEventsTests {
    /// 200 concurrent pushes under `sync` durability (so commit groups hold many entries): the
    /// coalescing listener's events, batch after batch, are the per-entry listener's.
    @Test func coalescedBatchesCarryTheSameEventsInLogOrder() async throws {
        let directory = TemporaryDirectory("events-coalesced")
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
        defer { engine.close() }
        let m = try Path("/m")
        let perEntry = ReceivedBatches()
        let coalesced = ReceivedBatches()
        let coalescedValues = ReceivedBatches()
        let query = Query(order: .key, limit: .last(3))
        _ = try await engine.listen(m, query: query, sink: perEntry.sink)
        _ = try await engine.listen(m, query: query, coalescesEntries: true, sink: coalesced.sink)
        _ = try await engine.listen(m, selection: .valueChangesOnly, coalescesEntries: true, sink: coalescedValues.sink)
        var ids: [LogID] = []
        try await withThrowingTaskGroup(of: LogID.self) { group in
            for i in 0..<200 {
                group.addTask { try await engine.push(m, .number(Double(i))).logID }
            }
            for try await id in group { ids.append(id) }
        }
        let expected = perEntry.take().dropFirst()
        let got = coalesced.take()
        #expect(got.first == [ChildEvent(kind: .value, key: nil, previousKey: nil, value: .null, logID: nil)], "the attach batch alone")
        let live = got.dropFirst()
        print("coalesced: 200 entries in \(live.count) batches")
        #expect(live.count <= 200)
        #expect(live.allSatisfy { !$0.isEmpty })
        #expect(live.flatMap { $0 } == expected.flatMap { $0 }, "the same events, in the same order")
        for batch in live {
            let batchIDs = batch.compactMap(\.logID)
            #expect(batchIDs.count == batch.count && batchIDs == batchIDs.sorted(), "each event names its entry; log order")
        }
        // The value-changes listener: one value event per entry, each with its entry's changes.
        let values = coalescedValues.take().dropFirst().flatMap { $0 }
        #expect(values.map(\.kind) == Array(repeating: .value, count: 200))
        #expect(values.compactMap(\.logID) == ids.sorted())
        #expect(values.allSatisfy { $0.changes?.count == 1 })
    }

    /// Two listeners share one coalescing window; concurrent writes silence one or the other
    /// (as a connection silences its own subscription). Each hears exactly the entries not
    /// silenced for it, in log order.
    @Test func silencedWritesKeepEachListenerInLogOrder() async throws {
        let directory = TemporaryDirectory("events-coalesced-silenced")
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
        defer { engine.close() }
        let m = try Path("/m")
        let first = ReceivedBatches()
        let second = ReceivedBatches()
        let a = try await engine.listen(m, selection: .valueChangesOnly, coalescesEntries: true, sink: first.sink).id
        let b = try await engine.listen(m, selection: .valueChangesOnly, coalescesEntries: true, sink: second.sink).id
        _ = first.take()
        _ = second.take()
        // Write i silences the first listener when i % 3 == 1, the second when i % 3 == 2.
        let written = try await withThrowingTaskGroup(of: (Int, LogID).self) { group in
            for i in 0..<150 {
                let silenced: Set<ListenerID> = i % 3 == 1 ? [a] : i % 3 == 2 ? [b] : []
                group.addTask {
                    (i, try await engine.write(.set(m.appending("k\(i)"), .number(Double(i))), silencing: silenced).committed!.logID)
                }
            }
            var written: [(Int, LogID)] = []
            for try await pair in group { written.append(pair) }
            return written
        }
        let heardByFirst = written.filter { $0.0 % 3 != 1 }.map(\.1).sorted()
        let heardBySecond = written.filter { $0.0 % 3 != 2 }.map(\.1).sorted()
        #expect(first.take().flatMap { $0 }.compactMap(\.logID) == heardByFirst)
        #expect(second.take().flatMap { $0 }.compactMap(\.logID) == heardBySecond)
    }
}
