// Value events that carry the change (`EventSelection.valueChanges`): what SSE streams and native
// subscriptions send. A table pins the exact changes per write shape (Firebase's REST streaming:
// a put at the written path, a patch of an update's children per parent, a put of "/" for a
// write above the location, nothing beside it or for a write that changes nothing); a
// model-based test checks that a client applying every change holds exactly what the database
// holds, for plain and query listeners, with and without child events, live and resumed.
//
// Rerun a failure with `EDDY_SEED=<seed>`; `EDDY_EVENTS_MAX` sets the number of writes.

import EddyEngine
import EddyModel
import EddyTesting
import Testing

@Suite struct ValueChangeEventTests {
    /// The value changes of every batch received since the last call (attach batches excluded).
    static func changes(_ received: ReceivedBatches) -> [[ValueChange]] {
        received.take().compactMap { batch in batch.last(where: { $0.kind == .value })?.changes }
    }

    struct Row: CustomStringConvertible, Sendable {
        var name: String
        var location: String
        var write: WriteOperation
        var expected: [ValueChange]
        var description: String { self.name }
    }

    static let initial = #"{"t1": {"list": {"a": 1}, "p": 5, "deep": {"x": {"y": {"z": 1}}}}, "beside": {"b": 1}}"#

    static let rows: [Row] = [
        Row(name: "set below", location: "/t1", write: .set(p("/t1/deep/x/y/z"), .number(5)),
            expected: [.put(path: p("/deep/x/y/z"), value: .number(5))]),
        Row(name: "set at", location: "/t1/list", write: .set(p("/t1/list"), json(#"{"c": 3}"#)),
            expected: [.put(path: .root, value: json(#"{"c": 3}"#))]),
        Row(name: "set above", location: "/t1/list", write: .set(p("/t1"), json(#"{"list": {"z": 26}}"#)),
            expected: [.put(path: .root, value: json(#"{"z": 26}"#))]),
        Row(name: "set above, location gone", location: "/t1/list", write: .set(p("/"), json(#"{"other": 1}"#)),
            expected: [.put(path: .root, value: .null)]),
        Row(name: "set above, location unchanged", location: "/t1/list", write: .set(p("/t1"), json(#"{"list": {"a": 1}, "p": 6}"#)),
            expected: []),
        Row(name: "set beside, same parent", location: "/t1/list", write: .set(p("/t1/p"), .number(6)), expected: []),
        Row(name: "set above a primitive", location: "/t1/p", write: .set(p("/t1"), json(#"{"p": 7}"#)),
            expected: [.put(path: .root, value: .number(7))]),
        Row(name: "set beside", location: "/t1", write: .set(p("/beside/b"), .number(2)), expected: []),
        Row(name: "set the same value", location: "/t1", write: .set(p("/t1/list/a"), .number(1)), expected: []),
        Row(name: "set below a primitive", location: "/t1", write: .set(p("/t1/p/q"), .number(1)),
            expected: [.put(path: p("/p/q"), value: .number(1))]),
        Row(name: "remove below", location: "/t1", write: .remove(p("/t1/list/a")), expected: [.put(path: p("/list/a"), value: .null)]),
        Row(name: "remove at", location: "/t1/list", write: .remove(p("/t1/list")), expected: [.put(path: .root, value: .null)]),
        Row(name: "remove nothing", location: "/t1", write: .remove(p("/t1/nothing")), expected: []),
        Row(name: "update below, one parent", location: "/t1", write: .update(p("/t1/list"), [change("b", .number(2)), change("a", .null)]),
            expected: [.patch(path: p("/list"), children: ["a": .null, "b": .number(2)])]),
        Row(name: "update from the root, deep key", location: "/t1", write: .update(.root, [change("t1/list/b", .number(2))]),
            expected: [.patch(path: p("/list"), children: ["b": .number(2)])]),
        Row(name: "update at the location", location: "/t1", write: .update(p("/t1"), [change("p", .number(9)), change("q", .bool(true))]),
            expected: [.patch(path: .root, children: ["p": .number(9), "q": .bool(true)])]),
        Row(name: "multi-path update, several parents", location: "/t1",
            write: .update(.root, [change("t1/list/b", .number(2)), change("t1/p", .null), change("t1/deep/x/w", .number(3)), change("beside/c", .number(1))]),
            expected: [
                .patch(path: .root, children: ["p": .null]), .patch(path: p("/deep/x"), children: ["w": .number(3)]),
                .patch(path: p("/list"), children: ["b": .number(2)]),
            ]),
        Row(name: "update that names the location", location: "/t1/list", write: .update(p("/t1"), [change("list", json(#"{"n": 1}"#)), change("p", .number(1))]),
            expected: [.put(path: .root, value: json(#"{"n": 1}"#))]),
        Row(name: "update above", location: "/t1/list/a", write: .update(.root, [change("t1", json(#"{"list": {"a": 2}}"#))]),
            expected: [.put(path: .root, value: .number(2))]),
        Row(name: "update beside", location: "/t1", write: .update(p("/beside"), [change("b", .number(5))]), expected: []),
        Row(name: "update partly unchanged", location: "/t1", write: .update(p("/t1/list"), [change("a", .number(1)), change("b", .number(2))]),
            expected: [.patch(path: p("/list"), children: ["b": .number(2)])]),
    ]

    static func change(_ path: String, _ value: Value) -> LogEntry.Change { LogEntry.Change(path: p(path), value: value) }

    @Test(arguments: rows) func theChangeOfEachWriteShape(_ row: Row) async throws {
        try await withEngine { engine in
            _ = try await engine.set(.root, json(Self.initial).normalized())
            for selection in [EventSelection.valueChangesOnly, .childEventsAndValueChanges] {
                let received = ReceivedBatches()
                let attachment = try await engine.listen(p(row.location), selection: selection, sink: received.sink)
                let attach = received.take()
                #expect(attach.count == 1 && attach[0].last?.kind == .value && attach[0].last?.changes == nil, "attach: the whole value")
                #expect(attach[0].last?.value == (try await engine.get(p(row.location))))
                let before = try await engine.get(p(row.location))
                let written = try await engine.write(row.write).committed!
                let got = Self.changes(received)
                #expect(got == (row.expected.isEmpty ? [] : [row.expected]), "\(row.name), child events: \(selection.childEvents)")
                var value = before
                for change in got.joined() { change.apply(to: &value) }
                #expect(value == (try await engine.get(p(row.location))), "\(row.name): applied")
                // Resuming after the entry before it yields the same changes.
                await engine.removeListener(attachment.id)
                let resumedBatches = ReceivedBatches()
                let lastBefore = try engine.readLogEntries(after: nil, limit: 1000).last { $0.id < written.logID }!.id
                let resumed = try await engine.listen(p(row.location), since: lastBefore, selection: selection, sink: resumedBatches.sink)
                #expect(Self.changes(resumedBatches) == got, "\(row.name): resumed")
                await engine.removeListener(resumed.id)
                _ = try await engine.set(.root, json(Self.initial).normalized())
            }
        }
    }

    /// A query listener's changes name the children that entered, left or changed.
    @Test func queryListenersHearTheirWindow() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/q"), json(#"{"a": {"s": 3}, "b": {"s": 1}, "c": {"s": 2}}"#))
            _ = try await engine.setRules(json(#"{"rules": {"q": {".indexOn": "s"}}}"#))
            try await engine.waitForIndexes()
            let received = ReceivedBatches()
            let query = Query(order: .child(p("s")), limit: .first(2))
            _ = try await engine.listen(p("/q"), query: query, selection: .valueChangesOnly, sink: received.sink)
            #expect(received.take().first?.last?.value == json(#"{"b": {"s": 1}, "c": {"s": 2}}"#))
            _ = try await engine.set(p("/q/d"), json(#"{"s": 0}"#))
            #expect(Self.changes(received) == [[.patch(path: .root, children: ["c": .null, "d": json(#"{"s": 0}"#)])]])
            _ = try await engine.set(p("/q/a/s"), .number(9))
            #expect(Self.changes(received).isEmpty, "outside the window")
            _ = try await engine.set(p("/q/b/t"), .bool(true))
            #expect(Self.changes(received) == [[.put(path: p("/b"), value: json(#"{"s": 1, "t": true}"#))]])
        }
    }

    /// Value events alone, with the whole value: one per change, nothing for other writes.
    @Test func wholeValueEventsWithoutChildEvents() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/w"), json(#"{"a": {"b": 1}}"#))
            let received = ReceivedBatches()
            _ = try await engine.listen(p("/w"), selection: EventSelection(childEvents: false, valueChanges: false), sink: received.sink)
            #expect(received.take().map { $0.map(\.kind) } == [[.value]])
            _ = try await engine.set(p("/w/a/b"), .number(2))
            _ = try await engine.set(p("/other"), .number(2))
            let batches = received.take()
            #expect(batches.map { $0.map(\.kind) } == [[.value]])
            #expect(batches.first?.first?.value == json(#"{"a": {"b": 2}}"#) && batches.first?.first?.changes == nil)
        }
    }

    /// Listeners attaching to one location between two writes share one read of it; each
    /// attaches with the state after the newest write, in its own form (plain or export).
    @Test func attachesShareAReadOnlyUntilTheNextWrite() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/big"), json(#"{"a": 1, "b": {".value": 2, ".priority": 7}}"#))
            func attach(export: Bool = false) async throws -> Value? {
                let received = ReceivedBatches()
                _ = try await engine.listen(p("/big"), selection: .valueChangesOnly, exportsPriorities: export, sink: received.sink)
                return received.take().first?.last?.value
            }
            for _ in 0..<3 { #expect(try await attach() == json(#"{"a": 1, "b": 2}"#)) }
            #expect(try await attach(export: true) == json(#"{"a": 1, "b": {".value": 2, ".priority": 7}}"#))
            #expect(try await attach() == json(#"{"a": 1, "b": 2}"#))
            _ = try await engine.set(p("/big/c"), .number(3))
            #expect(try await attach() == json(#"{"a": 1, "b": 2, "c": 3}"#))
            _ = try await engine.set(p("/elsewhere"), .number(1))
            _ = try await engine.remove(p("/big/a"))
            #expect(try await attach() == json(#"{"b": 2, "c": 3}"#))
            #expect(try await attach(export: true) == json(#"{"b": {".value": 2, ".priority": 7}, "c": 3}"#))
        }
    }

    struct Listener {
        var location: Path
        var query: Query?
        var selection: EventSelection
        var received: ReceivedBatches
        var cache: Value
    }

    @Test func aClientApplyingEveryChangeHoldsWhatTheDatabaseHolds() async throws {
        let seed = SeededGenerator.seedFromEnvironment()
        let writes = SeededGenerator.eventsMaxFromEnvironment(default: 300)
        print("ValueChangeEventTests: EDDY_SEED=\(seed) EDDY_EVENTS_MAX=\(writes)")
        var g = SeededGenerator(seed: seed)
        try await withEngine { engine in
            let keys = ["a", "b", "c", "1"]
            func randomPath(_ g: inout SeededGenerator, depthMax: Int) -> Path {
                Path(validatedKeys: (0..<g.int(in: 0...depthMax)).map { _ in g.element(of: keys) })
            }
            func randomValue(_ g: inout SeededGenerator, depth: Int = 0) -> Value {
                switch g.int(in: 0..<(depth >= 2 ? 3 : 5)) {
                case 0: return .null
                case 1: return .number(Double(g.int(in: 0...3)))
                case 2: return .string(g.element(of: ["x", "y"]))
                default:
                    var children: [String: Value] = [:]
                    for key in keys where g.chance(1, in: 2) { children[key] = randomValue(&g, depth: depth + 1) }
                    return Value.object(children).normalized()
                }
            }
            _ = try await engine.setRules(json(#"{"rules": {"a": {".indexOn": ["a", ".value"]}}}"#))
            _ = try await engine.set(.root, randomValue(&g))
            try await engine.waitForIndexes()
            var listeners: [Listener] = []
            let queries: [Query] = [
                Query(order: .key, limit: .first(2)), Query(order: .child(p("a")), limit: .last(2)),
                Query(order: .value, start: Query.Bound(value: .number(1), inclusive: true)),
            ]
            for i in 0..<12 {
                let query: Query? = i < 9 ? nil : queries[i - 9]
                let location = query == nil ? randomPath(&g, depthMax: 3) : p("/a")
                let selection: EventSelection = i % 3 == 0 ? .childEventsAndValueChanges : .valueChangesOnly
                let received = ReceivedBatches()
                _ = try await engine.listen(location, query: query, selection: selection, sink: received.sink)
                let attach = received.take()
                #expect(attach.count == 1 && attach[0].last?.changes == nil)
                listeners.append(Listener(location: location, query: query, selection: selection, received: received, cache: attach[0].last?.value ?? .null))
            }
            var history: [LogID] = []
            for step in 0..<writes {
                let path = randomPath(&g, depthMax: 4)
                let operation: WriteOperation
                switch g.int(in: 0..<6) {
                case 0, 1: operation = .set(path, randomValue(&g))
                case 2: operation = .remove(path)
                case 3: operation = .push(path, randomValue(&g, depth: 2).isNull ? .number(1) : randomValue(&g, depth: 2))
                default:
                    // Disjoint paths below `path`: distinct first keys.
                    var changes: [LogEntry.Change] = []
                    for key in keys where g.chance(1, in: 2) {
                        let below = Path(validatedKeys: [key] + randomPath(&g, depthMax: 2).keys)
                        changes.append(LogEntry.Change(path: below, value: randomValue(&g, depth: 1)))
                    }
                    if changes.isEmpty { changes = [LogEntry.Change(path: p("b"), value: .number(1))] }
                    operation = .update(path, changes)
                }
                guard case .committed(let written)? = try? await engine.write(operation) else { continue }
                history.append(written.logID)
                let root = try await engine.get(.root)
                for i in listeners.indices {
                    let listener = listeners[i]
                    let batches = listener.received.take()
                    #expect(batches.count <= 1, "seed \(seed) step \(step): one batch per entry")
                    for batch in batches {
                        #expect(batch.allSatisfy { $0.logID == written.logID })
                        if listener.selection.childEvents == false { #expect(batch.count == 1 && batch[0].kind == .value) }
                        for change in batch.last?.changes ?? [] { change.apply(to: &listeners[i].cache) }
                    }
                    let expected: Value
                    if let query = listener.query {
                        let result = ReferenceModel.listenerResult(root, at: listener.location, query)
                        expected = Value.object(Dictionary(uniqueKeysWithValues: result.map { ($0.key, $0.value) })).normalized()
                    } else {
                        expected = root.child(at: listener.location)
                    }
                    #expect(
                        listeners[i].cache == expected,
                        "seed \(seed) step \(step) \(operation) listener \(listener.location) \(String(describing: listener.query)) child events: \(listener.selection.childEvents)")
                }
            }
            // Resumed from a past entry, applying the changes to the value then gives today's.
            for _ in 0..<4 where history.count > 2 {
                let k = g.int(in: 0..<(history.count - 1))
                let listener = g.element(of: listeners.filter { $0.query == nil })
                var value = try await engine.get(listener.location)
                // The value at history[k]: undo every later entry with its before-images.
                let later = try engine.readLogEntries(after: history[k], limit: 10_000)
                var root = try await engine.get(.root)
                for entry in later.reversed() { for image in entry.before.reversed() { root.set(image.value, at: image.path) } }
                value = root.child(at: listener.location)
                let received = ReceivedBatches()
                let resumed = try await engine.listen(listener.location, since: history[k], selection: listener.selection, sink: received.sink)
                for batch in received.take() { for change in batch.last?.changes ?? [] { change.apply(to: &value) } }
                #expect(value == (try await engine.get(listener.location)), "seed \(seed): resumed at \(listener.location) after \(k)")
                await engine.removeListener(resumed.id)
            }
        }
    }
}
