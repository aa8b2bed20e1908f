// Priority queries through the Swift client against a real eddyd, written from Firebase's Apple
// SDK's integration tests (FIRDatabaseQueryTests): bounds on priorities with and without child
// keys, equalTo, null priorities (first, included by endAt, alone between null bounds), and a
// limit without an order (priority order). Each runs on the writer's own writes before eddyd
// answers (local events) and on data already on the server read by another client.

import Dispatch
import EddyClient
import Foundation
import Testing

@Suite(.serialized) struct ClientPriorityQueriesTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.client.priority-queries.tests")

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    /// The last value each query's observer saw, as JSON text (sorted keys).
    private final class Expectations: Sendable {
        let seen = Recorder<(Int, String)>()

        func observe(_ queries: [DatabaseQuery]) {
            for (i, query) in queries.enumerated() {
                query.observe(.value) { snapshot in
                    let data = try? JSONSerialization.data(withJSONObject: snapshot.value ?? NSNull(), options: [.sortedKeys, .fragmentsAllowed])
                    self.seen.add((i, data.map { String(decoding: $0, as: UTF8.self) } ?? "?"))
                }
            }
        }

        /// Waits until query i's last value is `expected[i]` for every i (at most 60 s).
        func wait(for expected: [String]) async throws -> [String] {
            let deadline = Date().addingTimeInterval(60)
            while true {
                var last = [String](repeating: "(none)", count: expected.count)
                for (i, text) in self.seen.all { last[i] = text }
                if last == expected || Date() > deadline { return last }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    private static var letters: [String: Any] { [
        "a": [".value": 1, ".priority": "z"], "b": [".value": 2, ".priority": "y"], "c": [".value": 3, ".priority": "x"],
        "d": [".value": 4, ".priority": "w"],
    ] }
    private static var numbered: [String: Any] { [
        "a": [".value": 1, ".priority": 1], "b": [".value": 2, ".priority": 1], "c": [".value": 3, ".priority": 2],
        "d": [".value": 4, ".priority": 2],
    ] }
    private static var withNulls: [String: Any] { [
        "a": 0, "b": 1, "c": [".priority": 2, ".value": 2], "d": [".priority": 3, ".value": 3], "e": [".priority": "hi", ".value": 4],
    ] }

    /// Each case: the data, the queries (built on a location) and the values they select.
    private func cases() -> [(data: [String: Any], queries: (DatabaseReference) -> [DatabaseQuery], expected: [String])] {
        [
            (
                Self.letters,
                { ref in
                    [
                        ref.queryOrderedByPriority().queryStarting(atValue: "w").queryEnding(atValue: "y"),
                        ref.queryOrderedByPriority().queryStarting(atValue: "w").queryEnding(atValue: "w"),
                        ref.queryOrderedByPriority().queryStarting(atValue: "a").queryEnding(atValue: "c"),
                        ref.queryOrderedByPriority().queryStarting(afterValue: "w").queryEnding(atValue: "y"),
                        ref.queryOrderedByPriority().queryStarting(atValue: "w").queryEnding(beforeValue: "y"),
                        ref.queryOrderedByPriority().queryEqual(toValue: "w"),
                        ref.queryOrderedByPriority().queryEqual(toValue: "c"),
                    ]
                },
                [#"{"b":2,"c":3,"d":4}"#, #"{"d":4}"#, "null", #"{"b":2,"c":3}"#, #"{"c":3,"d":4}"#, #"{"d":4}"#, "null"]
            ),
            (
                Self.numbered,
                { ref in
                    [
                        ref.queryOrderedByPriority().queryStarting(atValue: 1, childKey: "a").queryEnding(atValue: 2, childKey: "d"),
                        ref.queryOrderedByPriority().queryStarting(atValue: 1, childKey: "b").queryEnding(atValue: 2, childKey: "c"),
                        ref.queryOrderedByPriority().queryStarting(atValue: 1, childKey: "c").queryEnding(atValue: 2),
                        ref.queryOrderedByPriority().queryEqual(toValue: 1, childKey: "b"),
                    ]
                },
                [#"{"a":1,"b":2,"c":3,"d":4}"#, #"{"b":2,"c":3}"#, #"{"c":3,"d":4}"#, #"{"b":2}"#]
            ),
            (
                Self.withNulls,
                { ref in
                    [
                        ref.queryOrderedByPriority().queryStarting(atValue: nil).queryEnding(atValue: nil),
                        ref.queryOrderedByPriority().queryEnding(atValue: 2),
                        ref.queryOrderedByPriority().queryEnding(beforeValue: 2),
                        ref.queryLimited(toLast: 2),
                        ref.queryLimited(toFirst: 3),
                    ]
                },
                [#"{"a":0,"b":1}"#, #"{"a":0,"b":1,"c":2}"#, #"{"a":0,"b":1}"#, #"{"d":3,"e":4}"#, #"{"a":0,"b":1,"c":2}"#]
            ),
            (
                // Priority order is not key order here: y (none), z (0), x (1).
                ["x": [".value": 1, ".priority": 1], "y": 2, "z": [".value": 3, ".priority": 0]],
                { ref in
                    [ref.queryLimited(toFirst: 2), ref.queryLimited(toLast: 1), ref.queryStarting(atValue: 0), ref.queryEnding(atValue: 0).queryLimited(toLast: 1)]
                },
                [#"{"y":2,"z":3}"#, #"{"x":1}"#, #"{"x":1,"z":3}"#, #"{"z":3}"#]
            ),
        ]
    }

    /// Observed before the data is written (not awaited): the client's own writes select them.
    @Test func priorityQueriesOnLocalWrites() async throws {
        let database = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        for (i, item) in self.cases().enumerated() {
            let ref = database.reference().child("pq/local/\(i)")
            let expectations = Expectations()
            expectations.observe(item.queries(ref))
            ref.setValue(item.data) { _, _ in }
            #expect(try await expectations.wait(for: item.expected) == item.expected, "case \(i)")
        }
    }

    /// Written first, then observed by another client: eddyd selects them.
    @Test func priorityQueriesOnServerData() async throws {
        let writer = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        let reader = Database.database(url: self.daemon.httpURL, callingBackOn: self.queue)
        for (i, item) in self.cases().enumerated() {
            try await writer.reference().child("pq/server/\(i)").setValue(item.data)
            let expectations = Expectations()
            expectations.observe(item.queries(reader.reference().child("pq/server/\(i)")))
            #expect(try await expectations.wait(for: item.expected) == item.expected, "case \(i)")
            for (query, expected) in zip(item.queries(reader.reference().child("pq/server/\(i)")), item.expected) {
                let read = try await query.getData()
                let data = try JSONSerialization.data(withJSONObject: read.value ?? NSNull(), options: [.sortedKeys, .fragmentsAllowed])
                #expect(String(decoding: data, as: UTF8.self) == expected, "case \(i), a read of \(query)")
            }
        }
    }

    /// A limit without an order keeps the children last in priority order, null priorities
    /// first (FIRDatabaseQueryTests testLimitWithMixOfNullAndNonNullPriorities), as they arrive.
    @Test func aLimitWithNullAndNonNullPriorities() async throws {
        let database = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        let scores: [String: Any] = [
            "Vikrum": [".priority": 1000, "score": 1000], "Mike": [".priority": 500, "score": 500], "Andrew": [".priority": 50, "score": 50],
            "James": [".priority": 7, "score": 7], "Sally": [".priority": -7, "score": -7], "Fred": ["score": 0],
        ]
        let expected = ["Sally", "James", "Andrew", "Mike", "Vikrum"]
        let local = Recorder<String>()
        let ref = database.reference().child("pq/limit")
        ref.queryLimited(toLast: 5).observe(.childAdded) { local.add($0.key) }
        try await ref.setValue(scores)
        #expect(try await local.wait(for: 5) == expected)
        let reader = Database.database(url: self.daemon.httpURL, callingBackOn: self.queue)
        let server = Recorder<String>()
        reader.reference().child("pq/limit").queryLimited(toLast: 5).observe(.childAdded) { server.add($0.key) }
        #expect(try await server.wait(for: 5) == expected)
    }
}
