// Helpers shared by the EddyEngine suites: temporary data directories holding a real RocksDB,
// an injectable clock, path/JSON shorthands, and expecting an `EddyError` with a given code
// whose message names what the user needs.

import EddyEngine
import EddyModel
import Foundation
import Logging
import Synchronization
import Testing

/// A clock the test sets and steps by hand (tests never sleep).
final class ManualClock: MillisecondClock {
    private let now: Mutex<UInt64>

    init(_ start: UInt64 = 1_700_000_000_000) {
        self.now = Mutex(start)
    }

    func nowMilliseconds() -> UInt64 { self.now.withLock { $0 } }

    func set(_ milliseconds: UInt64) { self.now.withLock { $0 = milliseconds } }

    func advance(by milliseconds: UInt64) { self.now.withLock { $0 += milliseconds } }
}

/// A counter shared with callbacks on other threads (commit observers).
final class Counter: Sendable {
    private let atomic = Atomic<Int>(0)

    var value: Int { self.atomic.load(ordering: .sequentiallyConsistent) }

    func add(_ n: Int) { self.atomic.add(n, ordering: .sequentiallyConsistent) }

    /// Raises the value to at least `n`.
    func raise(to n: Int) {
        var current = self.atomic.load(ordering: .sequentiallyConsistent)
        while current < n {
            let (exchanged, original) = self.atomic.compareExchange(
                expected: current, desired: n, ordering: .sequentiallyConsistent)
            if exchanged { return }
            current = original
        }
    }
}

/// Entries collected by a commit observer.
final class Observed: Sendable {
    private let collected = Mutex<[LogEntry]>([])

    var entries: [LogEntry] { self.collected.withLock { $0 } }

    func append(_ entries: [LogEntry]) { self.collected.withLock { $0 += entries } }
}

/// A fresh, unique directory under the system temp directory; removed by `remove()`.
struct TemporaryDirectory: Sendable {
    let path: String

    init(_ label: String = #function) {
        let safe = label.filter { $0.isLetter || $0.isNumber }.prefix(40)
        self.path = FileManager.default.temporaryDirectory
            .appendingPathComponent("eddy-engine-tests-\(safe)-\(UUID().uuidString)").path
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: self.path)
    }
}

/// Warnings and worse only, so test output stays readable.
let quietLogger: Logger = {
    var logger = Logger(label: "eddy.engine.tests")
    logger.logLevel = .warning
    return logger
}()

/// Opens an engine over a fresh temporary directory, runs `body`, then closes it and removes
/// the directory.
func withEngine<T>(
    durability: Durability = .none, clock: any MillisecondClock = ManualClock(), label: String = #function,
    _ body: (Engine) async throws -> T
) async throws -> T {
    let directory = TemporaryDirectory(label)
    defer { directory.remove() }
    let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: durability), clock: clock, logger: quietLogger)
    defer { engine.close() }
    return try await body(engine)
}

/// Parses a path that the test knows to be valid.
func p(_ string: String) -> Path {
    do {
        return try Path(string)
    } catch {
        preconditionFailure("test path \(string) is invalid: \(error)")
    }
}

/// Parses JSON the test knows to be valid (not normalized: nulls stay).
func json(_ text: String) -> Value {
    do {
        return try JSONParser.parse(text)
    } catch {
        preconditionFailure("test JSON \(text) is invalid: \(error)")
    }
}

/// The canonical JSON text of a value (arrays rendered, keys in Firebase order).
func text(_ value: Value) -> String { JSONWriter.string(value) }


extension Engine {
    /// Number of entries in the log (reads it all; tests only).
    func logCount() throws -> Int {
        var count = 0
        var after: LogID? = nil
        while true {
            let page = try self.readLogEntries(after: after, limit: Limits.logReadCountMax)
            count += page.count
            guard let last = page.last else { return count }
            after = last.id
        }
    }
}
