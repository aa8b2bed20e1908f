// Model-based test of listeners in export form (`exportsPriorities`, value changes only): for
// every random write (values holding priorities, `<path>/.priority` sets and removals, updates
// naming `.priority` members, removals that empty prioritized nodes, writes above the
// locations), each listener's copy, the attach value with every change applied in order
// (`ValueChange.applyExport`), equals what a read answers in export form at that moment: the
// location's `readExportValue` for a plain listener, `queryExport` for a query. A listener
// resumed from the first entry ends at the same value.
//
// Rerun a failure with `EDDY_SEED=<seed>`; `EDDY_EVENTS_MAX` sets the number of writes.

import EddyEngine
import EddyModel
import EddyTesting
import Testing

@Suite struct ExportListenerModelTests {
    @Test func exportListenersFollowTheExportForm() async throws {
        let seed = SeededGenerator.seedFromEnvironment()
        let writes = SeededGenerator.eventsMaxFromEnvironment(default: 200)
        print("ExportListenerModelTests: EDDY_SEED=\(seed) EDDY_EVENTS_MAX=\(writes)")
        var g = SeededGenerator(seed: seed)
        try await withEngine { engine in
            let keys = ["a", "b", "c", "1"]
            func priority(_ g: inout SeededGenerator) -> Value {
                switch g.int(in: 0..<4) {
                case 0: return .null
                case 1: return .number(Double(g.int(in: 0...3)))
                case 2: return .string(g.element(of: ["p", "q"]))
                default: return .number(-1.5)
                }
            }
            func value(_ g: inout SeededGenerator, depth: Int) -> Value {
                let leaf: Value = g.chance(1, in: 2) ? .number(Double(g.int(in: 0...3))) : .string(g.element(of: ["x", "y"]))
                var node: Value
                if depth >= 2 || g.chance(1, in: 2) {
                    node = leaf
                } else {
                    var children: [String: Value] = [:]
                    for key in keys where g.chance(1, in: 2) { children[key] = value(&g, depth: depth + 1) }
                    node = children.isEmpty ? leaf : .object(children)
                }
                return node.withOwnPriority(priority(&g))
            }
            func path(_ g: inout SeededGenerator, depthMax: Int) -> Path {
                var keys: [String] = []
                for _ in 0..<g.int(in: 1...depthMax) { keys.append(g.element(of: ["a", "b", "c", "1"])) }
                return Path(validatedKeys: ["r"] + keys)
            }

            _ = try await engine.set(Path(validatedKeys: ["r"]), value(&g, depth: 0).withOwnPriority(.number(1)))
            let start = try #require(try engine.lastLogID())
            let listens: [(location: Path, query: Query?)] = [
                (Path(validatedKeys: ["r"]), nil), (Path(validatedKeys: ["r", "a"]), nil),
                (Path(validatedKeys: ["r"]), Query(order: .priority, limit: .first(2))),
                (Path(validatedKeys: ["r"]), Query(order: .key, limit: .last(2))),
                (Path(validatedKeys: ["r", "b"]), Query(order: .priority)),
            ]
            func listen(_ index: Int, since: LogID?) async throws -> ReceivedBatches {
                let batches = ReceivedBatches()
                _ = try await engine.listen(
                    listens[index].location, query: listens[index].query, since: since, selection: .valueChangesOnly,
                    exportsPriorities: true, sink: batches.sink)
                return batches
            }
            func expected(_ index: Int) async throws -> Value {
                let (location, query) = listens[index]
                guard let query else { return try engine.readExportValue(location) }
                return try await engine.queryExport(location, query, access: .admin)
            }
            func apply(_ batches: [[ChildEvent]], to copy: inout Value) {
                for event in batches.joined() where event.kind == .value {
                    if let changes = event.changes {
                        for change in changes { change.applyExport(to: &copy) }
                    } else {
                        copy = event.value
                    }
                }
            }
            var received: [ReceivedBatches] = []
            var copies: [Value] = []
            for i in listens.indices {
                received.append(try await listen(i, since: nil))
                copies.append(.null)
            }
            var atStart: [Value] = []
            for i in listens.indices {
                apply(received[i].take(), to: &copies[i])
                #expect(copies[i] == (try await expected(i)), "seed \(seed): attach of listen \(i)")
                atStart.append(copies[i])
            }

            for step in 0..<writes {
                var description = ""
                switch g.int(in: 0..<6) {
                case 0, 1:
                    let target = path(&g, depthMax: 3)
                    let new = value(&g, depth: target.depth - 1)
                    description = "set \(target) \(text(new))"
                    _ = try await engine.set(target, new)
                case 2:
                    let node = path(&g, depthMax: 3)
                    let new = priority(&g)
                    description = "set \(node)/.priority \(text(new))"
                    _ = try await engine.set(node.appending(Value.priorityKey), new)
                case 3:
                    let location = path(&g, depthMax: 2)
                    var changes: [LogEntry.Change] = []
                    for key in keys where g.chance(1, in: 2) {
                        changes.append(LogEntry.Change(path: Path(validatedKeys: [key]), value: g.chance(1, in: 4) ? .null : value(&g, depth: location.depth)))
                    }
                    if g.chance(1, in: 2) { changes.append(LogEntry.Change(path: Path(validatedKeys: [Value.priorityKey]), value: priority(&g))) }
                    guard !changes.isEmpty else { continue }
                    description = "update \(location) \(changes.map { "\($0.path)=\(text($0.value))" })"
                    _ = try await engine.update(location, changes)
                case 4:
                    let target = path(&g, depthMax: 3)
                    description = "remove \(target)"
                    _ = try await engine.remove(target)
                default:
                    let new = value(&g, depth: 0)
                    description = "set / {r: \(text(new))}"
                    _ = try await engine.set(.root, .object(["r": new]).withOwnPriority(.null))
                }
                for i in listens.indices {
                    let batches = received[i].take()
                    apply(batches, to: &copies[i])
                    let want = try await expected(i)
                    #expect(
                        copies[i] == want,
                        "seed \(seed) step \(step) \(description): listen \(i): \(text(copies[i])) != \(text(want)); heard \(batches.joined().map(\.description))")
                    if copies[i] != want { return }
                }
            }
            for i in listens.indices {
                let resumed = try await listen(i, since: start)
                var copy = atStart[i]
                apply(resumed.take(), to: &copy)
                #expect(copy == copies[i], "seed \(seed): listen \(i) resumed from the first entry: \(text(copy)) != \(text(copies[i]))")
            }
        }
    }
}
