// Model-based test of live events: listeners (plain, key-path filtered, and key/value/child
// queries with bounds and limit windows) attached to a real engine receive, for every random
// write, exactly the events that `ReferenceModel.events` derives from the whole database before
// and after it: same kinds, keys, previous keys, values and order, tagged with the write's log
// id; writes that change nothing a listener sees, or that silence it, send it nothing. A
// change-set listener receives `ReferenceModel.changeSet`. Also checks attach batches,
// identical listens (which share one window in the engine: twins attached at the start and
// mid-run, one silenced alone, an original removed while its twin stays) and resuming.
//
// Rerun a failure with `EDDY_SEED=<seed>`; `EDDY_EVENTS_MAX` sets the number of writes.

import EddyEngine
import EddyModel
import EddyTesting
import Synchronization
import Testing

/// Event batches a sink received, from any thread.
final class ReceivedBatches: Sendable {
    private let batches = Mutex<[[ChildEvent]]>([])

    var sink: ChildEventSink { { events in self.batches.withLock { $0.append(events) } } }

    func take() -> [[ChildEvent]] {
        self.batches.withLock { batches in
            defer { batches.removeAll() }
            return batches
        }
    }
}

/// Change sets a sink received, from any thread.
final class ReceivedChanges: Sendable {
    private let changes = Mutex<[ResultChange]>([])

    var sink: ResultChangeSink { { change in self.changes.withLock { $0.append(change) } } }

    func take() -> [ResultChange] {
        self.changes.withLock { changes in
            defer { changes.removeAll() }
            return changes
        }
    }
}

@Suite struct EventModelBasedTests {
    struct Listener {
        var location: Path
        var query: Query?
        var keyPaths: [Path]? = nil
        var received: ReceivedBatches
        var id: ListenerID
    }

    /// The oracle's events with a key-path filter: a child that stayed and did not move
    /// notifies only when a value at one of the key paths changed; value only with a child event.
    static func filtered(
        _ events: [ListenerEvent], before: Value, after: Value, at location: Path, keyPaths: [Path]?
    ) -> [ListenerEvent] {
        guard let keyPaths else { return events }
        let old = before.child(at: location)
        let new = after.child(at: location)
        let moved = Set(events.filter { $0.kind == .childMoved }.compactMap(\.key))
        let kept = events.filter { event in
            guard event.kind == .childChanged, let key = event.key, !moved.contains(key) else { return event.kind != .value }
            return keyPaths.contains { old[key].child(at: $0) != new[key].child(at: $0) }
        }
        guard !kept.isEmpty || (old.isPrimitive || new.isPrimitive) && old != new else { return [] }
        return kept + events.filter { $0.kind == .value }
    }

    static func describe(_ events: [ChildEvent]) -> [String] {
        events.map { "\($0.kind.rawValue) \($0.key ?? "-") prev \($0.previousKey ?? "null") \(JSONWriter.string($0.value))" }
    }

    static func describe(_ events: [ListenerEvent]) -> [String] {
        events.map { "\($0.kind.rawValue) \($0.key ?? "-") prev \($0.previousKey ?? "null") \(JSONWriter.string($0.value))" }
    }

    @Test func listenersReceiveExactlyTheReferenceEvents() async throws {
        let seed = SeededGenerator.seedFromEnvironment()
        let writes = SeededGenerator.eventsMaxFromEnvironment(default: 300)
        print("EventModelBasedTests: EDDY_SEED=\(seed) EDDY_EVENTS_MAX=\(writes)")
        var g = SeededGenerator(seed: seed)
        let directory = TemporaryDirectory("events")
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { engine.close() }
        var root = Value.null
        let keys = ["a", "b", "c", "d", "e", "1", "2", "10"]
        func randomChild(_ g: inout SeededGenerator) -> Value {
            switch g.int(in: 0..<4) {
            case 0: return .number(Double(g.int(in: 0...4)))
            case 1: return .string(g.element(of: ["x", "y", "é"]))
            default: return .object(["s": .number(Double(g.int(in: 0...4))), "t": .bool(g.bool())])
            }
        }
        // Some data before anyone listens.
        var initial: [String: Value] = [:]
        for key in keys where g.chance(1, in: 2) { initial[key] = randomChild(&g) }
        root = Value.object(["m": .object(initial)]).normalized()
        _ = try await engine.set(.root, root)
        _ = try await engine.setRules(try JSONParser.parse(#"{"rules": {"m": {".indexOn": [".value", "s"]}}}"#))
        try await engine.waitForIndexes()

        let m = Path(validatedKeys: ["m"])
        let s = Path(validatedKeys: ["s"])
        let queries: [(Path, Query?)] = [
            (.root, nil), (m, nil), (Path(validatedKeys: ["m", "a"]), nil),
            (m, Query(order: .key, limit: .first(2))),
            (m, Query(order: .key, start: Query.Bound(value: .string("b"), inclusive: true), limit: .last(3))),
            (m, Query(order: .value, limit: .last(3))),
            (m, Query(order: .value, end: Query.Bound(value: .number(3), inclusive: false))),
            (m, Query(order: .child(s), limit: .first(3))),
            (m, Query(order: .child(s), start: Query.Bound(value: .number(1), key: "c", inclusive: false), limit: .last(2))),
            (m, Query(order: .child(s), start: Query.Bound(value: .number(2), inclusive: true), end: Query.Bound(value: .number(3), inclusive: true))),
        ]
        // A change-set listener on a limit window.
        let changeQuery = Query(order: .child(s), limit: .first(3))
        let changes = ReceivedChanges()
        _ = try await engine.listenForChanges(m, query: changeQuery, sink: changes.sink)
        let initialChanges = changes.take()
        #expect(initialChanges.count == 1 && initialChanges.first?.kind == .initial)
        #expect(
            initialChanges.first?.results.map(\.key) == ReferenceModel.listenerResult(root, at: m, changeQuery).map(\.key),
            "seed \(seed): initial change set")

        var listeners: [Listener] = []
        // A plain listener that only cares about "s" inside children.
        let filtered = ReceivedBatches()
        let filteredAttachment = try await engine.listen(m, keyPaths: [s], sink: filtered.sink)
        _ = filtered.take()
        listeners.append(Listener(location: m, query: nil, keyPaths: [s], received: filtered, id: filteredAttachment.id))
        for (location, query) in queries {
            let received = ReceivedBatches()
            let attachment = try await engine.listen(location, query: query, sink: received.sink)
            let batches = received.take()
            let expected = ReferenceModel.initialEvents(root, at: location, query)
            #expect(batches.count == 1, "seed \(seed): one attach batch for \(location) \(String(describing: query))")
            #expect(
                batches.first.map(Self.describe) == Self.describe(expected),
                "seed \(seed): attach batch of \(location) \(String(describing: query))")
            #expect(batches.first?.allSatisfy { $0.logID == nil } == true)
            listeners.append(Listener(location: location, query: query, received: received, id: attachment.id))
        }
        // Twins: identical listens share one window; each still hears, and is silenced, alone.
        // One more twin joins mid-run, and an original leaves (its twin must keep hearing).
        func attachTwin(_ location: Path, _ query: Query?, step: Int) async throws {
            let received = ReceivedBatches()
            let attachment = try await engine.listen(location, query: query, sink: received.sink)
            #expect(
                received.take().map(Self.describe) == [Self.describe(ReferenceModel.initialEvents(root, at: location, query))],
                "seed \(seed) step \(step): attach batch of a twin of \(location) \(String(describing: query))")
            listeners.append(Listener(location: location, query: query, received: received, id: attachment.id))
        }
        for i in [1, 5, 7] { try await attachTwin(queries[i].0, queries[i].1, step: 0) }
        var removed: [Listener] = []

        var mismatches = 0
        var history: [(logID: LogID, before: Value, after: Value)] = []
        for step in 0..<writes {
            if step == writes / 3 { try await attachTwin(queries[5].0, queries[5].1, step: step) }
            if step == 2 * writes / 3 {
                let original = listeners.remove(at: 2)  // (m, nil); its twin stays
                #expect(try await engine.removeListener(original.id))
                removed.append(original)
            }
            let before = root
            let key = g.element(of: keys)
            // Now and then the write names a listener that must not hear it.
            let silenced: Set<ListenerID> = g.chance(1, in: 8) ? [g.element(of: listeners).id] : []
            let outcome: CommittedWrite
            var description: String
            switch g.int(in: 0..<10) {
            case 0, 1, 2:
                let value = g.chance(1, in: 6) ? Value.null : randomChild(&g)
                description = "set /m/\(key) \(JSONWriter.string(value))"
                outcome = try await engine.write(.set(m.appending(key), value), silencing: silenced).committed!
                root.set(value, at: m.appending(key))
            case 3, 4:
                let value = Value.number(Double(g.int(in: 0...4)))
                description = "set /m/\(key)/s \(JSONWriter.string(value))"
                outcome = try await engine.write(.set(m.appending(key).appending("s"), value), silencing: silenced).committed!
                root.set(value, at: m.appending(key).appending("s"))
            case 5:
                description = "remove /m/\(key)"
                outcome = try await engine.write(.remove(m.appending(key)), silencing: silenced).committed!
                root.set(.null, at: m.appending(key))
            case 6:
                let other = g.element(of: keys.filter { $0 != key })
                let v1 = randomChild(&g)
                let v2 = Value.number(Double(g.int(in: 0...4)))
                description = "update /m {\(key): \(JSONWriter.string(v1)), \(other)/s: \(JSONWriter.string(v2))}"
                let changes = [LogEntry.Change(path: Path(validatedKeys: [key]), value: v1), LogEntry.Change(path: Path(validatedKeys: [other, "s"]), value: v2)]
                outcome = try await engine.write(.update(m, changes), silencing: silenced).committed!
                root.set(v1, at: m.appending(key))
                root.set(v2, at: m.appending(other).appending("s"))
            case 7:
                let value = randomChild(&g)
                description = "push /m \(JSONWriter.string(value))"
                outcome = try await engine.write(.push(m, value), silencing: silenced).committed!
                root.set(value, at: m.appending(outcome.pushedKey!))
            case 8:
                var children: [String: Value] = [:]
                for k in keys where g.chance(1, in: 2) { children[k] = randomChild(&g) }
                let value = Value.object(children).normalized()
                description = "set /m \(JSONWriter.string(value))"
                outcome = try await engine.write(.set(m, value), silencing: silenced).committed!
                root.set(value, at: m)
            default:
                let value = Value.number(Double(g.int(in: 0...4)))
                description = "set /m/\(key)/s/deep \(JSONWriter.string(value))"
                outcome = try await engine.write(.set(m.appending(key).appending("s").appending("deep"), value), silencing: silenced).committed!
                root.set(value, at: m.appending(key).appending("s").appending("deep"))
            }
            #expect(try await engine.get(.root) == root, "seed \(seed) step \(step) \(description): the tree")
            history.append((outcome.logID, before, root))
            let expectedChange = ReferenceModel.changeSet(before: before, after: root, at: m, changeQuery)
            let gotChanges = changes.take()
            if let expectedChange {
                let newResult = ReferenceModel.listenerResult(root, at: m, changeQuery)
                #expect(gotChanges.count == 1, "seed \(seed) step \(step) \(description): one change set")
                if let got = gotChanges.first {
                    #expect(got.kind == .update && got.logID == outcome.logID)
                    #expect(got.results.map(\.key) == newResult.map(\.key) && got.results.map(\.value) == newResult.map(\.value))
                    #expect(
                        [got.deletions, got.insertions, got.modifications]
                            == [expectedChange.deletions, expectedChange.insertions, expectedChange.modifications],
                        "seed \(seed) step \(step) \(description): change set")
                }
            } else {
                #expect(gotChanges.isEmpty, "seed \(seed) step \(step) \(description): no change set expected")
            }
            for listener in removed {
                #expect(listener.received.take().isEmpty, "seed \(seed) step \(step): a removed listener heard \(description)")
            }
            for listener in listeners {
                var expected = Self.filtered(
                    ReferenceModel.events(before: before, after: root, at: listener.location, listener.query), before: before, after: root,
                    at: listener.location, keyPaths: listener.keyPaths)
                if silenced.contains(listener.id) { expected = [] }
                let batches = listener.received.take()
                let context = "seed \(seed) step \(step) \(description)\n  listener \(listener.location) \(String(describing: listener.query))"
                if expected.isEmpty {
                    #expect(batches.isEmpty, "\(context): expected nothing, got \(batches.map(Self.describe))")
                    if !batches.isEmpty { mismatches += 1 }
                    continue
                }
                let got = batches.count == 1 ? Self.describe(batches[0]) : batches.map(Self.describe).map { $0.joined(separator: "; ") }
                #expect(got == Self.describe(expected), "\(context)")
                #expect(batches.first?.allSatisfy { $0.logID == outcome.logID } == true, "\(context): log ids")
                if got != Self.describe(expected) { mismatches += 1 }
            }
            if mismatches >= 5 {
                Issue.record("seed \(seed): stopping after \(mismatches) mismatches")
                break
            }
        }
        // Resuming after a past entry: exactly the events of every later entry, one batch each.
        for _ in 0..<6 where !history.isEmpty {
            let k = g.int(in: 0..<history.count)
            let (location, query) = g.element(of: queries)
            let received = ReceivedBatches()
            let resumed = try await engine.listen(location, query: query, since: history[k].logID, sink: received.sink)
            var expected: [[String]] = []
            var ids: [LogID] = []
            for entry in history[(k + 1)...] {
                let events = ReferenceModel.events(before: entry.before, after: entry.after, at: location, query)
                if !events.isEmpty {
                    expected.append(Self.describe(events))
                    ids.append(entry.logID)
                }
            }
            let batches = received.take()
            #expect(batches.map(Self.describe) == expected, "seed \(seed): resume \(location) \(String(describing: query)) after step \(k)")
            #expect(batches.map { $0.first?.logID } == ids.map { Optional($0) })
            await engine.removeListener(resumed.id)
        }
        await expectEddyError(.invalidArgument, mentioning: ["newer than every entry"]) {
            _ = try await engine.listen(m, since: LogID("zzzzzzzzzzzzzzzzzzzz")!, sink: { _ in })
        }
        // A removed listener hears nothing more; removing all at /m keeps /m/a's.
        let one = listeners.first { $0.location == m && $0.query != nil }!
        #expect(await engine.removeListener(one.id))
        _ = try await engine.set(m.appending("a"), .number(42))
        #expect(one.received.take().isEmpty)
        #expect(await engine.removeListener(one.id) == false)
        for listener in listeners { _ = listener.received.take() }
        #expect(await engine.removeListeners(at: m))
        _ = try await engine.set(m.appending("a"), .number(43))
        for listener in listeners where listener.location == m {
            #expect(listener.received.take().isEmpty, "\(String(describing: listener.query)) was removed")
        }
        #expect(listeners.first { $0.location == m.appending("a") }?.received.take().count == 1, "/m/a keeps listening")
    }
}
