// Durable write throughput of the engine, against raw RocksDB synced puts as the peer baseline.
//
// Each benchmark opens its database in a fresh temporary directory in `setup` (not measured),
// keeps it open across iterations (so the data set grows the way a live database does), and
// closes and deletes it in `teardown`. One iteration is `scaledIterations` (1,000) acknowledged
// writes, so the time rows are per write and `throughput` is writes/s (to the nearest 1,000).
//
// Targets (see README.md): `Engine.push.sync.1writer` >= 0.8x `RocksDB.put.synced.1thread`;
// `Engine.push.sync.64writers` >= 100,000 acknowledged durable writes/s.

import Benchmark
import EddyEngine
import EddyModel
import EddyStorage
import Foundation
import Logging

let benchmarks: @Sendable () -> Void = {
    // Time metrics are reported, not gated (they depend on the machine and its load);
    // mallocCountTotal is deterministic enough to gate on later (STYLE.md §7).
    let metrics: [BenchmarkMetric] = [.wallClock, .throughput, .cpuTotal, .mallocCountTotal]

    // Each benchmark stops at whichever comes first. An iteration is 1,000 synced writes: ~50 ms
    // when an fsync costs ~40 us (idle disk), ~3 s when the disk is busy (~3 ms per fsync). 6 s
    // keeps the suite under two minutes either way while giving ~100 samples on a quiet machine.
    // Nanoseconds, so the per-write wall clock (the precise figure; `throughput` is whole
    // iterations per second, and 0 -- dropped -- for iterations over a second) keeps its digits.
    Benchmark.defaultConfiguration = .init(
        metrics: metrics,
        timeUnits: .nanoseconds,
        warmupIterations: 1,
        scalingFactor: .kilo,
        maxDuration: .seconds(6),
        maxIterations: 100
    )

    // MARK: Peer baseline

    let raw = Fixture<RawDatabase>()
    Benchmark("RocksDB.put.synced.1thread") { benchmark in
        let fixture = raw.value!
        for _ in benchmark.scaledIterations {
            try fixture.putNext()
        }
    } setup: {
        raw.value = try RawDatabase()
    } teardown: {
        raw.value?.close()
        raw.value = nil
    }

    // MARK: Engine

    let oneWriter = Fixture<EngineFixture>()
    Benchmark("Engine.push.sync.1writer") { benchmark in
        let fixture = oneWriter.value!
        for _ in benchmark.scaledIterations {
            _ = try await fixture.engine.push(fixture.items, fixture.value)
        }
    } setup: {
        oneWriter.value = try EngineFixture()
    } teardown: {
        oneWriter.value?.close()
        oneWriter.value = nil
    }

    let manyWriters = Fixture<EngineFixture>()
    let writerCount = 64
    Benchmark("Engine.push.sync.64writers") { benchmark in
        let fixture = manyWriters.value!
        let engine = fixture.engine
        let items = fixture.items
        let value = fixture.value
        let total = benchmark.scaledIterations.count
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writerCount {
                // Writer `w` takes every writerCount-th write, so the shares add up to `total`.
                let share = (total - writer + writerCount - 1) / writerCount
                group.addTask {
                    for _ in 0..<share { _ = try await engine.push(items, value) }
                }
            }
            try await group.waitForAll()
        }
    } setup: {
        manyWriters.value = try EngineFixture()
    } teardown: {
        manyWriters.value?.close()
        manyWriters.value = nil
    }
}

// MARK: Fixtures

/// Holds what `setup` made for the closure and `teardown`. package-benchmark runs setup, the
/// iterations and teardown of one benchmark one after another, never concurrently.
final class Fixture<T>: @unchecked Sendable {
    var value: T?
}

/// A temporary directory that `remove()` deletes with everything in it.
struct TemporaryDirectory {
    let path: String

    init(prefix: String) throws {
        self.path = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: self.path, withIntermediateDirectories: true)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: self.path)
    }
}

/// Raw RocksDB opened exactly as the engine opens it (same column families, same
/// `StorageOptions`), writing ~100-byte values under unique, increasing keys into `log` -- the
/// shape of the engine's own log appends, minus everything the engine adds.
final class RawDatabase {
    let directory: TemporaryDirectory
    let database: Database
    let family: ColumnFamily
    let value = [UInt8](repeating: UInt8(ascii: "v"), count: 100)
    private var next: UInt64 = 0

    init() throws {
        self.directory = try TemporaryDirectory(prefix: "eddy-bench-rocksdb")
        self.database = try Database(
            path: self.directory.path, columnFamilies: ["tree", "index", "log", "meta"], options: StorageOptions())
        self.family = self.database.columnFamily("log")
    }

    /// One synced put under the next key (20 bytes, like a push ID: "k" + 19 decimal digits).
    func putNext() throws {
        self.next += 1
        var key = Array("k".utf8)
        let digits = String(self.next)
        key.append(contentsOf: Array(repeating: UInt8(ascii: "0"), count: 19 - digits.utf8.count))
        key.append(contentsOf: digits.utf8)
        try self.database.put(self.family, key, self.value, durability: .sync)
    }

    func close() {
        self.database.close()
        self.directory.remove()
    }
}

/// An engine with `sync` durability in a temporary directory, and the push each benchmark repeats.
final class EngineFixture {
    let directory: TemporaryDirectory
    let engine: Engine
    let items: Path
    /// `{"name":"x","n":1}`: a small object, two leaves per push.
    let value: Value = .object(["name": .string("x"), "n": .number(1)])

    init() throws {
        self.directory = try TemporaryDirectory(prefix: "eddy-bench-engine")
        // The engine logs open/close at info; keep benchmark output to the results.
        let quiet = Logger(label: "eddy.bench", factory: { _ in SwiftLogNoOpLogHandler() })
        self.engine = try Engine.open(
            directory: self.directory.path, options: EngineOptions(durability: .sync), logger: quiet)
        self.items = try Path("/items")
    }

    func close() {
        self.engine.close()
        self.directory.remove()
    }
}
