// A plain driver for the write paths of EngineBenchmarks, for profilers (perf, callgrind) and
// for noise-resistant ratios: package-benchmark runs benchmarks one after another, so a burst
// of disk activity from elsewhere can land on one and not the other. `interleaved` alternates
// short raw and engine rounds and reports the ratio of each adjacent pair.
//
// Not a benchmark target (its directory is not `Benchmarks/<Name>`), so the benchmark plugin
// ignores it. Usage (release, from the repository root):
//   swift run -c release EngineWriteProfile <mode> [writes] [rounds] [sync|none]
//   mode: raw | push1 | push64 | update64 | interleaved        writes per round: default 2000
//   (update64: preloads that many children, then sets a leaf of a random one per write)
//   `none` (raw: no WAL; engine: durability .none) takes the fsync out, leaving the CPU and
//   thread-handoff cost of each path.

import EddyEngine
import EddyModel
import EddyStorage
import Foundation
import Logging

let arguments = CommandLine.arguments
let mode = arguments.count > 1 ? arguments[1] : "interleaved"
let writes = arguments.count > 2 ? Int(arguments[2])! : 2000
let rounds = arguments.count > 3 ? Int(arguments[3])! : 5
let synced = arguments.count > 4 ? arguments[4] != "none" : true

func temporaryDirectory(_ prefix: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

func seconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = ContinuousClock.now
    try await body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

final class Raw {
    let path: String
    let database: Database
    let family: ColumnFamily
    let value = [UInt8](repeating: UInt8(ascii: "v"), count: 100)
    var next: UInt64 = 0

    init() throws {
        self.path = try temporaryDirectory("eddy-profile-rocksdb")
        self.database = try Database(
            path: self.path, columnFamilies: ["tree", "index", "log", "meta"], options: StorageOptions())
        self.family = self.database.columnFamily("log")
    }

    func run(_ count: Int) throws {
        for _ in 0..<count {
            self.next += 1
            let digits = String(self.next)
            let key = Array("k".utf8) + Array(repeating: UInt8(ascii: "0"), count: 19 - digits.utf8.count) + Array(digits.utf8)
            try self.database.put(self.family, key, self.value, durability: synced ? .sync : .noWAL)
        }
    }

    func close() {
        self.database.close()
        try? FileManager.default.removeItem(atPath: self.path)
    }
}

final class Pusher: Sendable {
    let path: String
    let engine: Engine
    let items: Path
    let value: Value = .object(["name": .string("x"), "n": .number(1)])

    init() throws {
        self.path = try temporaryDirectory("eddy-profile-engine")
        let quiet = Logger(label: "eddy.profile", factory: { _ in SwiftLogNoOpLogHandler() })
        self.engine = try Engine.open(directory: self.path, options: EngineOptions(durability: synced ? .sync : .none), logger: quiet)
        self.items = try Path("/items")
    }

    func run(_ count: Int, writers: Int) async throws {
        if writers == 1 {
            for _ in 0..<count { _ = try await self.engine.push(self.items, self.value) }
            return
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                let share = (count - writer + writers - 1) / writers
                group.addTask { for _ in 0..<share { _ = try await self.engine.push(self.items, self.value) } }
            }
            try await group.waitForAll()
        }
    }

    /// Sets one leaf of a random child of `keys` per write: updates at random places of the
    /// tree, not appends.
    func update(_ count: Int, keys: [String], writers: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                let share = (count - writer + writers - 1) / writers
                group.addTask {
                    var g = SystemRandomNumberGenerator()
                    for _ in 0..<share {
                        let key = keys[Int.random(in: 0..<keys.count, using: &g)]
                        _ = try await self.engine.set(try Path("/items/\(key)/n"), .number(Double(Int.random(in: 0..<1000, using: &g))))
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    func close() {
        self.engine.close()
        try? FileManager.default.removeItem(atPath: self.path)
    }
}

func rate(_ count: Int, _ elapsed: Double) -> String { String(format: "%9.0f/s", Double(count) / elapsed) }

switch mode {
case "raw":
    let raw = try Raw()
    for round in 0..<rounds {
        let t = try await seconds { try raw.run(writes) }
        print("round \(round) RocksDB.put.\(synced ? "synced" : "noWAL").1thread \(rate(writes, t))")
    }
    raw.close()
case "push1", "push64":
    let writers = mode == "push1" ? 1 : 64
    let pusher = try Pusher()
    for round in 0..<rounds {
        let t = try await seconds { try await pusher.run(writes, writers: writers) }
        print("round \(round) Engine.push.\(synced ? "sync" : "none").\(writers)writer(s) \(rate(writes, t))")
    }
    pusher.close()
case "update64":
    // Preloads `writes` children, then sets a leaf of a random one per write, 64 writers.
    let pusher = try Pusher()
    var keys: [String] = []
    for _ in 0..<writes { keys.append(try await pusher.engine.push(pusher.items, pusher.value).pushedKey!) }
    for round in 0..<rounds {
        let t = try await seconds { try await pusher.update(writes, keys: keys, writers: 64) }
        print("round \(round) Engine.update.\(synced ? "sync" : "none").64writers \(rate(writes, t))")
    }
    pusher.close()
case "interleaved":
    let raw = try Raw()
    let pusher = try Pusher()
    var ratios: [Double] = []
    for round in 0..<rounds {
        let r = try await seconds { try raw.run(writes) }
        let e = try await seconds { try await pusher.run(writes, writers: 1) }
        let m = try await seconds { try await pusher.run(writes, writers: 64) }
        ratios.append(r / e)
        print(
            "round \(round) raw \(rate(writes, r))  push1 \(rate(writes, e))  push64 \(rate(writes, m))  push1/raw \(String(format: "%.2f", r / e))"
        )
    }
    print("median push1/raw \(String(format: "%.2f", ratios.sorted()[ratios.count / 2]))")
    raw.close()
    pusher.close()
default:
    print("unknown mode \(mode); use raw | push1 | push64 | update64 | interleaved")
    exit(2)
}
