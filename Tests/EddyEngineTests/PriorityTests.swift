// Priorities: written in Firebase's export form or at `<path>/.priority`, stored in their own
// family, answered only where asked for (`readExportValue`, `priority`), ordering `$priority`
// queries, replicated and undone with the rest of an entry, and checked by `verify`.

import EddyEngine
import EddyModel
import EddyStorage
import EddyTesting
import Foundation
import Testing

@Suite struct PriorityTests {
    /// A `<path>/.priority` path (plain paths refuse the key).
    private func pp(_ string: String) -> Path {
        do {
            return try Path(allowingPriority: string)
        } catch {
            preconditionFailure("test path \(string) is invalid: \(error)")
        }
    }

    private func export(_ engine: Engine, _ path: String = "/") throws -> String {
        text(try engine.readExportValue(p(path)))
    }

    private func priority(_ engine: Engine, _ path: String) async throws -> Value {
        try await engine.priority(p(path), access: .admin)
    }

    @Test func writesKeepPrioritiesThatOnlyExportAnswers() async throws {
        try await withEngine { engine in
            let written = try await engine.set(
                p("/a"), json(#"{"x": {".value": 1, ".priority": 5}, "y": {"z": 2, ".priority": "s"}, "w": {".value": 3}, ".priority": 1}"#))
            #expect(written.committed?.value == json(#"{"x": 1, "y": {"z": 2}, "w": 3}"#), "a write answers its data without priorities")
            #expect(text(try await engine.get(p("/a"))) == #"{"w":3,"x":1,"y":{"z":2}}"#)
            #expect(try self.export(engine) == #"{"a":{".priority":1,"w":3,"x":{".priority":5,".value":1},"y":{".priority":"s","z":2}}}"#)
            #expect(try await self.priority(engine, "/a") == .number(1))
            #expect(try await self.priority(engine, "/a/x") == .number(5))
            #expect(try await self.priority(engine, "/a/y") == .string("s"))
            #expect(try await self.priority(engine, "/a/w") == .null)
            #expect(try await self.priority(engine, "/missing") == .null)
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test func nullPrioritiesAndEmptyNodesKeepNone() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/a"), json(#"{"x": {".value": 1, ".priority": null}, "e": {".priority": 3}, "n": {"m": null, ".priority": 2}}"#))
            #expect(try self.export(engine) == #"{"a":{"x":1}}"#)
            _ = try await engine.set(p("/b"), json(#"{".value": {"k": 1}, ".priority": 4}"#))
            #expect(try self.export(engine, "/b") == #"{".priority":4,"k":1}"#, "an object under .value takes the priority itself")
        }
    }

    @Test func aSetReplacesPrioritiesAndAnUpdateKeepsItsLocations() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/a"), json(#"{"x": {".value": 1, ".priority": 5}, "y": {".value": 2, ".priority": 6}, ".priority": 1}"#))
            _ = try await engine.update(p("/a"), [LogEntry.Change(path: p("x"), value: .number(10))])
            #expect(try self.export(engine, "/a") == #"{".priority":1,"x":10,"y":{".priority":6,".value":2}}"#)
            _ = try await engine.set(p("/a"), json(#"{"y": 2}"#))
            #expect(try self.export(engine, "/a") == #"{"y":2}"#, "a set replaces the location's priority and those below it")
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test func priorityPathWritesSetOneNode() async throws {
        let clock = ManualClock(1_700_000_000_000)
        try await withEngine(clock: clock) { engine in
            _ = try await engine.set(p("/a"), json(#"{"leaf": 1, "obj": {"k": true}}"#))
            _ = try await engine.set(pp("/a/leaf/.priority"), .number(2))
            _ = try await engine.set(pp("/a/obj/.priority"), .string("p"))
            let missing = try await engine.set(pp("/a/missing/.priority"), .number(3))
            #expect(missing.committed?.value == .null, "an empty location keeps no priority")
            #expect(try self.export(engine, "/a") == #"{"leaf":{".priority":2,".value":1},"obj":{".priority":"p","k":true}}"#)
            _ = try await engine.set(pp("/a/leaf/.priority"), .null)
            _ = try await engine.set(pp("/a/obj/.priority"), json(#"{".sv": "timestamp"}"#))
            #expect(try self.export(engine, "/a") == #"{"leaf":1,"obj":{".priority":1700000000000,"k":true}}"#)
            #expect(text(try await engine.get(p("/a"))) == #"{"leaf":1,"obj":{"k":true}}"#)
            // Through an update, as a PATCH body names it.
            _ = try await engine.write(
                try WriteOperation.update(at: p("/a"), body: json(#"{"leaf/.priority": 7, "obj/.priority": null}"#)), access: .admin)
            #expect(try self.export(engine, "/a") == #"{"leaf":{".priority":7,".value":1},"obj":{"k":true}}"#)
            await expectEddyError(.invalidValue, mentioning: ["/a/leaf", "priority"]) {
                _ = try await engine.set(pp("/a/leaf/.priority"), json(#"{"k": 1}"#))
            }
            await expectEddyError(.invalidValue, mentioning: ["/a/leaf", "priority"]) {
                _ = try await engine.set(pp("/a/leaf/.priority"), .bool(true))
            }
            await expectEddyError(.invalidValue, mentioning: ["/a/x", "priority"]) {
                _ = try await engine.set(p("/a"), json(#"{"x": {".value": 1, ".priority": [1]}}"#))
            }
            #expect(try self.export(engine, "/a") == #"{"leaf":{".priority":7,".value":1},"obj":{"k":true}}"#, "a refused write changes nothing")
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test func aPrimitiveReplacedByChildrenKeepsItsPriorityAndAnEmptiedNodeLosesIt() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/a/b"), json(#"{".value": 1, ".priority": 3}"#))
            _ = try await engine.set(p("/a/b/c"), .number(2))
            #expect(try self.export(engine, "/a") == #"{"b":{".priority":3,"c":2}}"#, "Firebase keeps a primitive's priority when a child replaces it")
            _ = try await engine.set(pp("/a/.priority"), .number(9))
            _ = try await engine.remove(p("/a/b/c"))
            #expect(try self.export(engine) == "null", "a node left empty keeps no priority, nor its emptied parent")
            _ = try await engine.set(p("/a/b/d"), .number(4))
            #expect(try self.export(engine) == #"{"a":{"b":{"d":4}}}"#, "a node filled again has no priority from before")
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test func serverValuesInsideTheExportForm() async throws {
        let clock = ManualClock(1_700_000_000_000)
        try await withEngine(clock: clock) { engine in
            _ = try await engine.set(p("/n"), json(#"{".value": 5, ".priority": 1}"#))
            _ = try await engine.set(p("/n"), json(#"{".value": {".sv": {"increment": 2}}, ".priority": {".sv": "timestamp"}}"#))
            #expect(try self.export(engine, "/n") == #"{".priority":1700000000000,".value":7}"#, "the increment adds to the stored number")
            // An increment of a priority adds to the node's old priority (none: zero), in a value
            // and at `<path>/.priority`.
            _ = try await engine.set(p("/i"), json(#"{".value": 0, ".priority": {".sv": {"increment": 1}}}"#))
            _ = try await engine.set(p("/i"), json(#"{".value": 0, ".priority": {".sv": {"increment": 1.5}}}"#))
            #expect(try await self.priority(engine, "/i") == .number(2.5))
            _ = try await engine.set(pp("/i/.priority"), json(#"{".sv": {"increment": 2}}"#))
            #expect(try await self.priority(engine, "/i") == .number(4.5))
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test func priorityOrderedQueries() async throws {
        try await withEngine { engine in
            _ = try await engine.set(
                p("/q"),
                json(
                    #"{"a": {".value": 1, ".priority": "b"}, "b": {".value": 2, ".priority": 2}, "c": 3, "d": {"x": 1, ".priority": 1}, "e": {".value": 5, ".priority": "a"}, "f": {".value": 6, ".priority": 2}}"#
                ))
            func keys(_ query: Query) async throws -> [String] {
                // An answer is an object (its member order is no contract): its keys, listed in
                // priority order for comparison.
                guard case .object(let children) = try await engine.query(p("/q"), query) else { return [] }
                return children.keys.sorted { Self.expectedOrder.firstIndex(of: $0)! < Self.expectedOrder.firstIndex(of: $1)! }
            }
            // null < numbers < strings; ties by key: c, d(1), b(2), f(2), e("a"), a("b")
            #expect(try await keys(Query(order: .priority)) == Self.expectedOrder)
            #expect(try await keys(Query(order: .priority, limit: .first(2))) == ["c", "d"])
            #expect(try await keys(Query(order: .priority, limit: .last(2))) == ["e", "a"])
            #expect(try await keys(Query(order: .priority, start: .init(value: .number(2), inclusive: true))) == ["b", "f", "e", "a"])
            #expect(try await keys(Query(order: .priority, start: .init(value: .number(2), key: "c", inclusive: true))) == ["f", "e", "a"])
            #expect(try await keys(Query(order: .priority, end: .init(value: .number(2), inclusive: false))) == ["c", "d"])
            #expect(try await keys(Query(order: .priority, start: .init(value: .string("a"), inclusive: true))) == ["e", "a"])
            #expect(try await keys(Query(order: .priority, start: .init(value: .number(2), inclusive: true), end: .init(value: .number(2), inclusive: true))) == ["b", "f"])
            #expect(try await keys(Query(order: .priority, end: .init(value: .null, inclusive: true))) == ["c"])
            // The answer holds the data without priorities, as JSON too.
            let answer = try await engine.query(p("/q"), Query(order: .priority, limit: .first(2)))
            #expect(text(answer) == #"{"c":3,"d":{"x":1}}"#)
            #expect(try String(decoding: engine.readQueryJSON(p("/q"), Query(order: .priority, limit: .first(2))), as: UTF8.self) == text(answer))
        }
    }

    private static let expectedOrder = ["c", "d", "b", "f", "e", "a"]

    @Test func exportQueriesAnswerPrioritiesInTheirWindow() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/q"), json(#"{"a": {".value": 1, ".priority": 9}, "b": {"v": 2, ".priority": 1}, "c": 3}"#))
            let answer = try await engine.queryExport(p("/q"), Query(order: .priority, limit: .first(2)), access: .admin)
            #expect(text(answer) == #"{"b":{".priority":1,"v":2},"c":3}"#)
            let byKey = try await engine.queryExport(p("/q"), Query(order: .key, limit: .first(1)), access: .admin)
            #expect(text(byKey) == #"{"a":{".priority":9,".value":1}}"#)
        }
    }

    @Test func aFollowerAndADiscardKeepPrioritiesExactly() async throws {
        let leaderDirectory = TemporaryDirectory("priority-leader")
        let followerDirectory = TemporaryDirectory("priority-follower")
        defer {
            leaderDirectory.remove()
            followerDirectory.remove()
        }
        let leader = try Engine.open(directory: leaderDirectory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { leader.close() }
        var followerOptions = EngineOptions(durability: .none)
        followerOptions.leader = "/run/eddy/replication.sock"
        let follower = try Engine.open(directory: followerDirectory.path, options: followerOptions, logger: quietLogger)
        defer { follower.close() }
        _ = try await leader.set(p("/a"), json(#"{"x": {".value": 1, ".priority": 5}, "y": {"z": 2, ".priority": "s"}, ".priority": 1}"#))
        try await follower.applyReplicated(try leader.readLogEntries(after: nil, limit: 100))
        let common = try leader.lastLogID()!
        #expect(try follower.digest() == leader.digest())
        #expect(try self.export(follower) == self.export(leader))

        // Entries the follower then discards (as a deposed leader's own): each kind of change
        // to priorities, undone from before-images.
        let discardedEntries: [LogEntry]
        do {
            let scratchDirectory = TemporaryDirectory("priority-scratch")
            defer { scratchDirectory.remove() }
            // Entries made on a copy of the common state, so they follow `common`.
            let scratch = try Engine.open(directory: scratchDirectory.path, options: followerOptions, logger: quietLogger)
            try await scratch.applyReplicated(try leader.readLogEntries(after: nil, limit: 100))
            scratch.close()
            let writer = try Engine.open(directory: scratchDirectory.path, options: EngineOptions(durability: .none), logger: quietLogger)
            _ = try await writer.set(pp("/a/x/.priority"), .number(6))
            _ = try await writer.set(p("/a/x/child"), .number(1))
            _ = try await writer.remove(p("/a/y/z"))
            _ = try await writer.set(pp("/a/.priority"), .null)
            _ = try await writer.set(p("/a"), json(#"{"new": {".value": 1, ".priority": 2}}"#))
            discardedEntries = try writer.readLogEntries(after: common, limit: 100)
            writer.close()
        }
        #expect(discardedEntries.count == 5)
        try await follower.applyReplicated(discardedEntries)
        #expect(try self.export(follower) == #"{"a":{"new":{".priority":2,".value":1}}}"#)
        #expect(try follower.verify().isHealthy)
        let discarded = try await follower.discardEntries(after: common, countMax: 100)
        #expect(discarded.count == 5)
        #expect(try self.export(follower) == self.export(leader), "priorities are back as they were at the common entry")
        #expect(try follower.digest() == leader.digest())
        #expect(try follower.verify().isHealthy)
    }

    @Test func verifyReplaysPrioritiesAndFindsAStrayRecord() async throws {
        let directory = TemporaryDirectory("priority-verify")
        defer { directory.remove() }
        do {
            let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
            _ = try await engine.set(p("/a"), json(#"{"x": {".value": 1, ".priority": 5}, ".priority": 1}"#))
            _ = try await engine.set(pp("/a/x/.priority"), .string("t"))
            _ = try await engine.remove(p("/a/x"))
            _ = try await engine.set(p("/b"), json(#"{"c": {".value": 1, ".priority": 2}}"#))
            let report = try engine.verify()
            #expect(report.isHealthy, "\(report)")
            engine.close()
        }
        // A priority on a node the tree does not hold is reported.
        let database = try Database(path: directory.path, columnFamilies: ["tree", "index", "log", "meta", "priority"], options: StorageOptions())
        try database.put(database.columnFamily("priority"), PathKeyEncoding.encode(p("/nowhere")), LeafEncoding.encode(.number(1)), durability: .sync)
        database.close()
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { engine.close() }
        let report = try engine.verify()
        #expect(report.problem?.contains("priority") == true && report.problem?.contains("/nowhere") == true, "\(report)")
    }

    @Test func anExportHoldsPrioritiesAsTheExportFormDoes() async throws {
        let directory = TemporaryDirectory("priority-export")
        defer { directory.remove() }
        let value = json(
            #"{"a": {".priority": 1, "b": {".value": 2, ".priority": "x"}, "c": {"d": {".value": true, ".priority": 3}, "e": 1}}, "f": {".value": "s", ".priority": 0}, "g": [1, {".value": 2, ".priority": 4}]}"#
        )
        do {
            let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
            _ = try await engine.set(p("/"), value)
            engine.close()
        }
        for location in ["/", "/a", "/a/b", "/f", "/g"] {
            var out: [UInt8] = []
            try TreeExport.export(directory: directory.path, path: p(location)) { out += $0 }
            let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
            let expected = try engine.readExportValue(p(location))
            engine.close()
            #expect(try JSONParser.parse(String(decoding: out, as: UTF8.self)) == expected, "export of \(location)")
        }
    }

    @Test func aFormatThreeDatabaseWithoutTheFamilyOpensReadOnlyAndIsUpgraded() async throws {
        let directory = TemporaryDirectory("priority-format-3")
        defer { directory.remove() }
        do {
            // What a format 3 eddyd left: no `priority` family.
            let database = try Database(path: directory.path, columnFamilies: ["tree", "index", "log", "meta"], options: StorageOptions())
            try database.put(database.columnFamily("meta"), Array("format-version".utf8), [3], durability: .sync)
            try database.put(database.columnFamily("meta"), Array("database-id".utf8), Array("-P000000000000000000".utf8), durability: .sync)
            try database.put(database.columnFamily("tree"), PathKeyEncoding.encode(p("/a")), LeafEncoding.encode(.number(1)), durability: .sync)
            database.close()
        }
        var out: [UInt8] = []
        try TreeExport.export(directory: directory.path, path: .root) { out += $0 }
        #expect(String(decoding: out, as: UTF8.self) == #"{"a":1}"#, "a read-only open needs no family the database lacks")
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { engine.close() }
        _ = try await engine.set(pp("/a/.priority"), .number(2))
        #expect(try self.export(engine) == #"{"a":{".priority":2,".value":1}}"#)
    }

    /// Listeners hear data without priorities, live and resumed from the log (whose entries hold
    /// the export form); a priority-only write changes nothing they hear.
    @Test func listenersLiveAndResumedHearDataWithoutPriorities() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/r"), json(#"{"a": {".value": 1, ".priority": 1}, "b": {"x": 2, ".priority": 3}}"#))
            let start = try #require(try engine.lastLogID())
            let query = Query(order: .key, limit: .first(2))
            let live = ReceivedBatches()
            let liveQuery = ReceivedBatches()
            _ = try await engine.listen(p("/r"), selection: .childEventsAndValueChanges, sink: live.sink)
            _ = try await engine.listen(p("/r"), query: query, sink: liveQuery.sink)
            #expect(text(try #require(live.take().first?.last?.value)) == #"{"a":1,"b":{"x":2}}"#)
            _ = liveQuery.take()
            _ = try await engine.set(pp("/r/a/.priority"), .number(5))
            _ = try await engine.set(p("/r/b/y"), json(#"{".value": 4, ".priority": 9}"#))
            _ = try await engine.set(p("/a0"), json(#"{".value": 0, ".priority": 0}"#))
            _ = try await engine.set(p("/r/c"), json(#"{".value": 3, ".priority": 2}"#))
            _ = try await engine.remove(p("/r/b/x"))
            _ = try await engine.remove(p("/r/b/y"))
            let resumed = ReceivedBatches()
            let resumedQuery = ReceivedBatches()
            _ = try await engine.listen(p("/r"), since: start, selection: .childEventsAndValueChanges, sink: resumed.sink)
            _ = try await engine.listen(p("/r"), query: query, since: start, sink: resumedQuery.sink)
            let heard = [live.take(), resumed.take(), liveQuery.take(), resumedQuery.take()].map { Array($0.joined()) }
            for events in heard {
                let described = events.map(\.description).joined(separator: "; ")
                #expect(!described.contains(".priority") && !described.contains(".value"), "\(described)")
            }
            #expect(heard[0] == heard[1], "resumed from the log, the same events as live")
            #expect(heard[2] == heard[3], "a query's too")
            #expect(heard[2].last { $0.kind == .value }?.value == json(#"{"a": 1, "c": 3}"#))
            #expect(!heard[0].isEmpty && heard[0].allSatisfy { $0.logID != nil })
        }
    }

    /// A live query in priority order keeps the window a read of the same query answers, write
    /// after write (priorities written in values, at `<path>/.priority`, removed with their
    /// nodes), and a priority change moves its child (child_moved, then child_changed, with the
    /// data as it was). Resumed from the log, it hears the same.
    @Test func liveQueriesInPriorityOrderFollowThePriorities() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/l"), json(#"{"a": {".value": 1, ".priority": 3}, "b": 2, "c": {"x": 3, ".priority": 1}}"#))
            let start = try #require(try engine.lastLogID())
            let queries = [
                Query(order: .priority, limit: .first(2)), Query(order: .priority, limit: .last(2)),
                Query(order: .priority, start: .init(value: .number(2), inclusive: true)),
                Query(order: .priority),
            ]
            var received: [ReceivedBatches] = []
            for query in queries {
                let batches = ReceivedBatches()
                _ = try await engine.listen(p("/l"), query: query, sink: batches.sink)
                received.append(batches)
            }
            func check(_ step: String) async throws {
                for (query, batches) in zip(queries, received) {
                    let last = batches.take().joined().last { $0.kind == .value }
                    let expected = try await engine.query(p("/l"), query)
                    if let last { #expect(last.value == expected, "\(step): \(query)") }
                }
            }
            try await check("attach")
            _ = try await engine.set(pp("/l/b/.priority"), .number(0))
            try await check("b gets the lowest priority")
            _ = try await engine.set(p("/l/d"), json(#"{".value": 4, ".priority": "z"}"#))
            try await check("d added with a string priority")
            _ = try await engine.set(pp("/l/a/.priority"), .null)
            try await check("a's removed")
            _ = try await engine.remove(p("/l/b"))
            try await check("b removed")
            _ = try await engine.set(p("/l/c/x"), .number(30))
            try await check("c's data changed")

            // A moved child within a window that keeps it: moved, then changed, same data.
            let all = ReceivedBatches()
            _ = try await engine.listen(p("/l"), query: Query(order: .priority), sink: all.sink)
            _ = all.take()
            _ = try await engine.set(pp("/l/c/.priority"), .string("zz"))
            let events = Array(all.take().joined())
            #expect(events.map(\.kind) == [.childMoved, .childChanged, .value], "\(events)")
            #expect(events.first?.key == "c" && events.first?.previousKey == "d" && text(events[0].value) == #"{"x":30}"#, "\(events)")

            // The same query resumed from the first entry ends where the live one is.
            let resumed = ReceivedBatches()
            _ = try await engine.listen(p("/l"), query: queries[0], since: start, sink: resumed.sink)
            #expect(resumed.take().joined().last { $0.kind == .value }?.value == (try await engine.query(p("/l"), queries[0])))
        }
    }

    /// Listeners in export form (`exportsPriorities`, value changes only): applying each change
    /// to the attach value gives the export form a read answers, write after write: priorities
    /// in values, at `<path>/.priority` (the location's own too), in updates, removed with their
    /// nodes, written above the location. A query's window holds its children's priorities.
    /// Resumed from the log, each ends at the same value.
    @Test func listenersInExportFormFollowEveryPriority() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/e"), json(#"{"a": {".value": 1, ".priority": 3}, "b": 2, "c": {"x": 3, ".priority": 1}}"#))
            let start = try #require(try engine.lastLogID())
            let queries: [Query?] = [nil, Query(order: .priority, limit: .first(2)), Query(order: .key, limit: .last(2))]
            func listen(_ query: Query?, since: LogID?) async throws -> ReceivedBatches {
                let batches = ReceivedBatches()
                _ = try await engine.listen(
                    p("/e"), query: query, since: since, selection: .valueChangesOnly, exportsPriorities: true, sink: batches.sink)
                return batches
            }
            var copies: [Value] = []
            var received: [ReceivedBatches] = []
            for query in queries {
                let batches = try await listen(query, since: nil)
                received.append(batches)
                copies.append(.null)
            }
            func expected(_ query: Query?) async throws -> Value {
                guard let query else { return try engine.readExportValue(p("/e")) }
                return try await engine.queryExport(p("/e"), query, access: .admin)
            }
            func apply(_ events: [ChildEvent], to copy: inout Value) {
                for event in events where event.kind == .value {
                    if let changes = event.changes {
                        for change in changes { change.applyExport(to: &copy) }
                    } else {
                        copy = event.value
                    }
                }
            }
            func check(_ step: String) async throws {
                for i in queries.indices {
                    apply(Array(received[i].take().joined()), to: &copies[i])
                    let want = try await expected(queries[i])
                    #expect(copies[i] == want, "\(step): \(queries[i].map { "\($0)" } ?? "plain"): \(text(copies[i])) != \(text(want))")
                }
            }
            try await check("attach")
            let atAttach = copies
            #expect(text(copies[0]).contains(#"".priority":3"#), "the attach value holds the priorities")
            _ = try await engine.set(pp("/e/b/.priority"), .number(0))
            try await check("b's priority")
            _ = try await engine.set(pp("/e/.priority"), .string("own"))
            try await check("the location's own priority")
            _ = try await engine.set(p("/e/d"), json(#"{".value": 4, ".priority": "z"}"#))
            try await check("d added with a priority")
            _ = try await engine.update(p("/e"), [LogEntry.Change(path: pp("c/.priority"), value: .number(9)), LogEntry.Change(path: p("b"), value: .number(20))])
            try await check("an update of a priority and a value")
            _ = try await engine.set(pp("/e/a/.priority"), .null)
            try await check("a's priority removed")
            _ = try await engine.set(p("/e/c/x/y"), json(#"{".value": 1, ".priority": 2}"#))
            try await check("a priority deeper down")
            _ = try await engine.remove(p("/e/c"))
            try await check("c removed")
            _ = try await engine.update(p("/"), [LogEntry.Change(path: p("e/f"), value: json(#"{"g": 1, ".priority": 5}"#))])
            try await check("an update above the location")
            _ = try await engine.set(p("/"), json(#"{"e": {"a": {".value": 7, ".priority": 1}, ".priority": 2}}"#))
            try await check("the root replaced")

            // Resumed after the first entry: from the value at attach, the same end.
            for (i, query) in queries.enumerated() {
                let resumed = try await listen(query, since: start)
                var copy = atAttach[i]
                apply(Array(resumed.take().joined()), to: &copy)
                #expect(copy == copies[i], "resumed \(query.map { "\($0)" } ?? "plain"): \(text(copy)) != \(text(copies[i]))")
            }
        }
    }
}
