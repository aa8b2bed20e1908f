// Live events beyond the model-based test: a write that fails half way sends nothing and leaves
// every listener's result as it was; value/child listeners need an index like queries, and
// dropping it cancels them; under `sync` durability with concurrent writers, batches arrive in
// log order, one per entry.

import EddyEngine
import EddyModel
import EddyTesting
import Testing

@Suite struct EventEngineTests {
    @Test func aFailedWriteSendsNothingAndChangesNoResult() async throws {
        let directory = TemporaryDirectory("events-failed")
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { engine.close() }
        let m = try Path("/m")
        _ = try await engine.set(m, try JSONParser.parse(#"{"a": 1, "b": 1e308}"#))
        let received = ReceivedBatches()
        _ = try await engine.listen(m, sink: received.sink)
        _ = received.take()
        let overflow = try JSONParser.parse(#"{".sv": {"increment": 1e308}}"#)
        await expectEddyError(.invalidValue, mentioning: ["non-finite"]) {
            _ = try await engine.update(m, [LogEntry.Change(path: try Path("a"), value: .number(2)), LogEntry.Change(path: try Path("b"), value: overflow)])
        }
        #expect(received.take().isEmpty)
        _ = try await engine.set(try Path("/m/c"), .number(3))
        let batches = received.take()
        #expect(batches.count == 1)
        #expect(batches.first?.map(\.kind) == [.childAdded, .value])
        #expect(batches.first?.last?.value == (try JSONParser.parse(#"{"a": 1, "b": 1e308, "c": 3}"#)))
    }

    @Test func valueAndChildListenersNeedAnIndex() async throws {
        let directory = TemporaryDirectory("events-index")
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { engine.close() }
        await expectEddyError(.invalidArgument, mentioning: [#"Index not defined, add ".indexOn": "s", for path "/m""#]) {
            _ = try await engine.listen(try Path("/m"), query: Query(order: .child(try Path("s"))), sink: { _ in })
        }
        _ = try await engine.setRules(try JSONParser.parse(#"{"rules": {"m": {".indexOn": "s"}}}"#))
        try await engine.waitForIndexes()
        _ = try await engine.listen(try Path("/m"), query: Query(order: .child(try Path("s"))), sink: { _ in })
    }

    @Test func droppingTheIndexCancelsTheListen() async throws {
        let directory = TemporaryDirectory("events-cancel")
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { engine.close() }
        _ = try await engine.setRules(try JSONParser.parse(#"{"rules": {"m": {".indexOn": ["s", "t"]}}}"#))
        try await engine.waitForIndexes()
        let byS = ReceivedBatches()
        let twinByS = ReceivedBatches()
        let byT = ReceivedBatches()
        let changes = ReceivedChanges()
        _ = try await engine.listen(try Path("/m"), query: Query(order: .child(try Path("s"))), sink: byS.sink)
        _ = try await engine.listen(try Path("/m"), query: Query(order: .child(try Path("s"))), sink: twinByS.sink)
        _ = try await engine.listen(try Path("/m"), query: Query(order: .child(try Path("t"))), sink: byT.sink)
        _ = try await engine.listenForChanges(try Path("/m"), query: Query(order: .child(try Path("s"))), sink: changes.sink)
        _ = (byS.take(), twinByS.take(), byT.take(), changes.take())
        _ = try await engine.setRules(try JSONParser.parse(#"{"rules": {"m": {".indexOn": "t"}}}"#))
        let cancel = byS.take()
        #expect(cancel.count == 1 && cancel.first?.map(\.kind) == [.cancel])
        if case .string(let reason)? = cancel.first?.first?.value {
            #expect(reason.contains(#"".indexOn": "s" for path "/m" was removed"#), "\(reason)")
        } else {
            Issue.record("no reason")
        }
        #expect(twinByS.take().map { $0.map(\.kind) } == [[.cancel]], "an identical listen (sharing the window) is cancelled too")
        #expect(changes.take().map(\.kind) == [.cancelled])
        #expect(byT.take().isEmpty, "a listen whose index stays is untouched")
        _ = try await engine.set(try Path("/m/a"), try JSONParser.parse(#"{"s": 1, "t": 2}"#))
        #expect(byS.take().isEmpty, "nothing after cancel")
        #expect(byT.take().count == 1)
    }

    /// A listen that reaches the engine after a write, while that write still waits to be
    /// committed, has it in its first value: the committer runs control requests after the writes
    /// it takes with them (it ran them first, so a reader attaching on another connection right
    /// after a writer's set could first see the location without it).
    @Test func aListenAfterAWaitingWriteHasItInItsFirstValue() async throws {
        let directory = TemporaryDirectory("events-listen-after-write")
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
        defer { engine.close() }
        for round in 0..<100 {
            let path = try Path("/r/\(round)")
            try engine.submit(.set(path, .number(Double(round)))) { _ in }
            let received = ReceivedBatches()
            _ = try await engine.listen(path, sink: received.sink)
            var batches: [[ChildEvent]] = []
            let deadline = ContinuousClock.now + .seconds(10)
            while batches.isEmpty, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(1))
                batches = received.take()
            }
            #expect(batches.first?.last?.kind == .value && batches.first?.last?.value == .number(Double(round)), "round \(round): \(batches)")
        }
    }

    @Test func underSyncDurabilityBatchesArriveInLogOrder() async throws {
        let directory = TemporaryDirectory("events-sync")
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
        defer { engine.close() }
        let received = ReceivedBatches()
        let attachment = try await engine.listen(try Path("/m"), query: Query(order: .key, limit: .last(3)), sink: received.sink)
        #expect(attachment.liveAfter == nil)
        var ids: [LogID] = []
        try await withThrowingTaskGroup(of: LogID.self) { group in
            for i in 0..<200 {
                group.addTask { try await engine.push(try Path("/m"), .number(Double(i))).logID }
            }
            for try await id in group { ids.append(id) }
        }
        let batches = received.take()
        #expect(batches.first?.map(\.kind) == [.value], "the attach batch of an empty location")
        let live = batches.dropFirst()
        #expect(live.count == 200, "one batch per push")
        let batchIDs = live.compactMap { $0.first?.logID }
        #expect(batchIDs == ids.sorted(), "in log order")
        #expect(live.allSatisfy { batch in batch.allSatisfy { $0.logID == batch.first?.logID } })
        #expect(live.last?.last?.value.objectKeys == Set(ids.sorted().suffix(3).map(\.rawValue)))
    }
}

extension EventEngineTests {
    /// More listens at once than the committer's control queue held before (64): every attach
    /// succeeds, identical listens get the same attach batch, and a write reaches each once.
    @Test func aBurstOfListensIsAttached() async throws {
        let directory = TemporaryDirectory("events-burst")
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
        defer { engine.close() }
        _ = try await engine.set(try Path("/feed/a"), .number(1))
        let received = (0..<300).map { _ in ReceivedBatches() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, batches) in received.enumerated() {
                // Two of three share /feed; the rest listen to distinct paths below it.
                let location = i % 3 == 2 ? try Path("/feed/l\(i)") : try Path("/feed")
                group.addTask { _ = try await engine.listen(location, sink: batches.sink) }
            }
            try await group.waitForAll()
        }
        let shared = received.enumerated().filter { $0.offset % 3 != 2 }.map(\.element)
        for batches in shared {
            #expect(batches.take().map { $0.map(\.description) } == [["child_added a (prev null) 1", "value {\"a\":1}"]])
        }
        let id = try await engine.set(try Path("/feed/b"), .number(2)).committed!.logID
        for batches in shared {
            let got = batches.take()
            #expect(got.count == 1 && got.first?.map(\.kind) == [.childAdded, .value] && got.first?.first?.logID == id)
        }
    }
}

extension Value {
    fileprivate var objectKeys: Set<String> {
        guard case .object(let children) = self else { return [] }
        return Set(children.keys)
    }
}
