// A namespace being opened (a write-ahead-log replay, seconds after a crash) holds up only the
// uses of that namespace: another namespace is leased meanwhile, and a second use of the one
// opening waits for it and gets the same engine (never a second open of one database). Many
// tasks leasing more namespaces than stay open, opening and evicting them at once, each read
// back what they wrote, and never more than `namespacesOpenMax` are open.
//
// The open is held still by making the namespace's CURRENT file a FIFO: RocksDB's open reads
// it and blocks until the test writes the real contents. The test knows the open is under way
// when its own open of the FIFO for writing succeeds (a FIFO opens for writing only once a
// reader has it open).

import EddyEngine
import EddyModel
import EddyTesting
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` on a thread of its own (it blocks; Swift's pool must not wait on it).
private final class Background<Result: Sendable>: Sendable {
    private let result = Mutex<Result?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () -> Result) {
        let thread = Thread { [self] in
            let value = body()
            self.result.withLock { $0 = value }
            self.done.signal()
        }
        thread.start()
    }

    /// The result once `body` returned within `seconds`, nil otherwise.
    func wait(seconds: Double) -> Result? {
        guard self.done.wait(timeout: .now() + seconds) == .success else { return nil }
        return self.result.withLock { $0 }
    }

    var isFinished: Bool { self.result.withLock { $0 != nil } }
}

@Suite struct NamespaceOpenOutsideLockTests {
    typealias Outcome = Swift.Result<EngineLease, EddyError>

    fileprivate static func lease(_ data: DataDirectory, _ name: String) -> Background<Outcome> {
        Background { () -> Outcome in
            Outcome { () throws(EddyError) -> EngineLease in try data.lease(namespace: name) }
        }
    }

    @Test func aNamespaceOpeningHoldsUpOnlyItsOwnUses() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        do {
            let data = try DataDirectory(path: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
            for name in ["slow", "other"] {
                let lease = try data.lease(namespace: name)
                _ = try await lease.engine.set(p("/name"), .string(name))
                lease.release()
            }
            data.close()
        }
        let current = directory.path + "/slow/CURRENT"
        let contents = try String(contentsOfFile: current, encoding: .utf8)
        #expect(unlink(current) == 0)
        #expect(mkfifo(current, 0o600) == 0)

        let data = try DataDirectory(path: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
        defer { data.close() }
        let slow = Self.lease(data, "slow")
        // Wait (at most 20 s) until RocksDB has the FIFO open for reading, i.e. the open is under way.
        var writer: Int32 = -1
        for _ in 0..<20_000 where writer < 0 && !slow.isFinished {
            writer = open(current, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writer < 0 { usleep(1_000) }
        }
        try #require(writer >= 0, "the open of namespace slow never read its CURRENT file (finished: \(slow.isFinished))")

        // Meanwhile another namespace is leased; a second use of namespace slow waits.
        let other = Self.lease(data, "other")
        let otherOutcome = other.wait(seconds: 20)
        let secondSlow = Self.lease(data, "slow")
        #expect(otherOutcome != nil, "a lease of another namespace waited for namespace slow's open")
        #expect(!slow.isFinished && !secondSlow.isFinished, "namespace slow was leased before its open finished")

        // Let the open finish: both uses of namespace slow get the one engine.
        let bytes = Array(contents.utf8)
        #expect(write(writer, bytes, bytes.count) == bytes.count)
        close(writer)
        let first = try #require(slow.wait(seconds: 60)).get()
        let second = try #require(secondSlow.wait(seconds: 60)).get()
        #expect(first.engine === second.engine, "namespace slow was opened twice")
        #expect(try await first.engine.get(p("/name")) == .string("slow"))
        first.release()
        second.release()
        if let otherLease = try otherOutcome?.get() {
            #expect(try await otherLease.engine.get(p("/name")) == .string("other"))
            otherLease.release()
        }
        #expect(data.openNamespaces == ["other", "slow"])
    }

    @Test func concurrentLeasesOfMoreNamespacesThanStayOpenKeepEveryWrite() async throws {
        let seed = SeededGenerator.seedFromEnvironment()
        print("NamespaceOpenOutsideLockTests: EDDY_SEED=\(seed)")
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = try DataDirectory(path: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { data.close() }
        let namespaces = Limits.namespacesOpenMax + 16
        let tasks = 8
        let rounds = 40
        // What each task wrote last in each namespace (its own key there).
        let written = try await withThrowingTaskGroup(of: (task: Int, last: [Int: Int]).self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var random = SeededGenerator(seed: seed &+ UInt64(task))
                    var last: [Int: Int] = [:]
                    for round in 0..<rounds {
                        let n = random.int(in: 0..<namespaces)
                        let lease = try data.lease(namespace: "ns-\(n)")
                        defer { lease.release() }
                        let path = p("/task\(task)")
                        if let previous = last[n] {
                            #expect(try await lease.engine.get(path) == .number(Double(previous)), "ns-\(n) lost task \(task)'s write")
                        }
                        _ = try await lease.engine.set(path, .number(Double(round)))
                        last[n] = round
                        #expect(data.openNamespaces.count <= Limits.namespacesOpenMax)
                    }
                    return (task, last)
                }
            }
            var all: [Int: [Int: Int]] = [:]
            for try await (task, last) in group { all[task] = last }
            return all
        }
        #expect(data.namespaceFigures.closedForRoom > 0, "the test opened more namespaces than stay open")
        for (task, last) in written {
            for (n, round) in last {
                let lease = try data.lease(namespace: "ns-\(n)")
                defer { lease.release() }
                #expect(try await lease.engine.get(p("/task\(task)")) == .number(Double(round)))
            }
        }
    }
}
