// An export-form query (`format=export`, the native `get` of a query) reads the children it
// selects and their priorities on one snapshot: a write committed between the two reads must
// not show a child's new priority next to its old value (a state the database never had).

@testable import EddyEngine
import EddyModel
import EddyTesting
import Foundation
import Testing

@Suite struct ExportQuerySnapshotTests {
    /// `readQueryExport` on a thread of its own; `afterSelection` writes `change` at `path`
    /// (committed before the read goes on).
    static func readWhileWriting(
        _ engine: Engine, _ location: Path, _ query: Query, change: Value, at path: Path
    ) async throws -> Value {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, Error>) in
            Thread {
                continuation.resume(
                    with: Result { () throws -> Value in
                        try engine.readQueryExport(location, query, definition: try engine.index(for: location, query)) {
                            let written = DispatchSemaphore(value: 0)
                            Task.detached {
                                _ = try? await engine.set(path, change)
                                written.signal()
                            }
                            written.wait()
                        }
                    })
            }.start()
        }
    }

    @Test(arguments: [
        Query(order: .key), Query(order: .priority, limit: .first(2)), Query(order: .child(p("v")), limit: .last(2)),
    ])
    func aWriteBetweenTheSelectionAndThePrioritiesIsNotHalfSeen(query: Query) async throws {
        try await withEngine { engine in
            _ = try await engine.setRules(try JSONParser.parse(#"{"rules": {".read": true, ".write": true, "q": {".indexOn": "v"}}}"#))
            try await engine.waitForIndexes()
            _ = try await engine.set(p("/q"), json(#"{"a": {"v": 1, ".priority": 1}, "b": {"v": 2, ".priority": 2}}"#))
            let answer = try await Self.readWhileWriting(
                engine, p("/q"), query, change: json(#"{"v": 1, "w": 0, ".priority": 10}"#), at: p("/q/a"))
            #expect(text(answer) == #"{"a":{".priority":1,"v":1},"b":{".priority":2,"v":2}}"#, "the answer mixes two states")
            // The write happened: the next read shows it whole.
            let after = try await engine.queryExport(p("/q"), query, access: .admin)
            #expect(text(after).contains(#""a":{".priority":10,"v":1,"w":0}"#))
        }
    }
}
