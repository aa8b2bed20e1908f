// Shared pieces of the index driver: opening an engine, loading the data set through big
// multi-path updates, timing, percentiles and output formatting.

import EddyEngine
import EddyModel
import Foundation
import Logging

let items = try! Path("/items")
let quietLogger = Logger(label: "eddy.index-profile", factory: { _ in SwiftLogNoOpLogHandler() })

func temporaryDirectory(_ prefix: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

func openEngine(_ directory: String, durability: Durability = .sync) throws -> Engine {
    try Engine.open(directory: directory, options: EngineOptions(durability: durability), logger: quietLogger)
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func elapsed(_ body: () async throws -> Void) async rethrows -> Double {
    let start = ContinuousClock.now
    try await body()
    return seconds(ContinuousClock.now - start)
}

/// The value at `fraction` (0...1) of sorted `samples`, nearest rank.
func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    precondition(!sorted.isEmpty)
    let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
}

func median(_ samples: [Double]) -> Double { percentile(samples.sorted(), 0.5) }

func format(_ value: Double, _ decimals: Int = 1) -> String { String(format: "%.\(decimals)f", value) }

/// Prints one JSON object on one line: the line scripts read (`grep '^{'`).
func printJSON(_ value: Value) { print(JSONWriter.string(value)) }

/// True when `engine` already holds exactly `data` under /items (the last child exists, the one
/// after it does not), so a `--data` directory prepared earlier is reused without reloading.
func holdsDataSet(_ engine: Engine, _ data: DataSet) throws -> Bool {
    let last = try engine.readValue(items.appending(data.key(data.count - 1)))
    let next = try engine.readValue(items.appending(data.key(data.count)))
    return last == data.child(data.count - 1) && next == .null
}

/// Writes children `0..<data.count` under /items in updates of `Limits.updatePathsCountMax`
/// paths, `inFlight` updates at a time so the committer can group them. Returns children/s.
@discardableResult
func load(_ engine: Engine, _ data: DataSet, inFlight: Int = 4) async throws -> Double {
    let chunk = Limits.updatePathsCountMax
    let chunks = (data.count + chunk - 1) / chunk
    let time = try await elapsed {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for c in 0..<chunks {
                if c >= inFlight { try await group.next() }
                group.addTask {
                    var changes: [LogEntry.Change] = []
                    changes.reserveCapacity(chunk)
                    for i in (c * chunk)..<min(data.count, (c + 1) * chunk) {
                        changes.append(.init(path: Path(validatedKeys: [data.key(i)]), value: data.child(i)))
                    }
                    _ = try await engine.update(items, changes)
                }
            }
            try await group.waitForAll()
        }
    }
    return Double(data.count) / time
}

/// Opens (or creates) the engine in `directory` and makes sure it holds `data`; prints what it did.
func openLoaded(_ directory: String, _ data: DataSet) async throws -> Engine {
    let engine = try openEngine(directory)
    if try holdsDataSet(engine, data) {
        print("reusing \(directory): \(data.count) children under /items")
    } else {
        let rate = try await load(engine, data)
        print(
            "loaded \(data.count) children under /items in \(format(Double(data.count) / rate, 2)) s (\(Int(rate)) children/s)"
        )
    }
    return engine
}

func rulesDocument(_ indexOn: [String]) -> Value {
    if indexOn.isEmpty { return .object(["rules": .object([:])]) }
    let on: Value =
        indexOn.count == 1
        ? .string(indexOn[0])
        : .object(
            Dictionary(uniqueKeysWithValues: indexOn.enumerated().map { (String($0.offset), Value.string($0.element)) })
        )
    return .object(["rules": .object(["items": .object([".indexOn": on])])])
}

/// `waitForIndexes`, then until the compactions that follow a build are done (queries are
/// right meanwhile, only slower, and the compaction competes for the CPU): measurements start
/// from the shape the index keeps.
func waitForIndexesSettled(_ engine: Engine) async throws {
    try await engine.waitForIndexes(timeoutSeconds: 3600)
    while engine.indexCompactionsPending > 0 { try await Task.sleep(for: .milliseconds(10)) }
}
