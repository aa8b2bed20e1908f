// Leadership terms in log entries (fencing by term): a cluster leader's entries carry the term
// its fence proves, a term older than the log's newest is refused, the newest term survives a
// reopen, writes outside a cluster inherit it, and a replica refuses entries of an older term
// than it applied (a deposed leader's), applying nothing after them.

import EddyEngine
import EddyModel
import EddyTesting
import Synchronization
import Testing

/// A fence that answers whatever term (or refusal, nil) the test sets.
final class TermFence: Sendable {
    let term = Mutex<UInt64?>(nil)

    func answer() -> Result<UInt64, EddyError> {
        self.term.withLock { $0 }.map { .success($0) } ?? .failure(EddyError(.notLeader, "lease not proven (test)"))
    }

    var fence: @Sendable () -> Result<UInt64, EddyError> { { self.answer() } }
}

@Suite struct LeadershipTermTests {
    private func openLeader(_ directory: TemporaryDirectory, _ fence: TermFence?) throws -> Engine {
        var options = EngineOptions(durability: .none)
        options.writeFence = fence?.fence
        return try Engine.open(directory: directory.path, options: options, logger: quietLogger)
    }

    @Test func aLeadersEntriesCarryItsTermAndAnOlderTermIsRefused() async throws {
        let directory = TemporaryDirectory("terms-leader")
        defer { directory.remove() }
        let fence = TermFence()
        fence.term.withLock { $0 = 7 }
        do {
            let engine = try self.openLeader(directory, fence)
            defer { engine.close() }
            _ = try await engine.set(p("/a"), .number(1))
            fence.term.withLock { $0 = 9 }
            _ = try await engine.push(p("/list"), .number(2))
            #expect(try engine.readLogEntries(after: nil, limit: 10).map(\.term) == [7, 9])
            #expect(engine.newestTerm == 9)
            #expect(engine.currentTerm() == 9)

            // A fence proving an older term than the newest entry's: refused, nothing applied.
            fence.term.withLock { $0 = 8 }
            await expectEddyError(.notLeader, mentioning: ["term 8", "term 9"]) { _ = try await engine.set(p("/b"), .number(3)) }
            fence.term.withLock { $0 = nil }
            await expectEddyError(.notLeader, mentioning: ["lease"]) { _ = try await engine.set(p("/b"), .number(3)) }
            #expect(try engine.readLogEntries(after: nil, limit: 10).count == 2)
            #expect(try await engine.get(p("/b")) == .null)
            #expect(try engine.readLogEntries(after: nil, limit: 10).last?.json["term"] == .number(9))
        }
        // The newest term is read back from the log; outside a cluster writes inherit it.
        let reopened = try self.openLeader(directory, nil)
        defer { reopened.close() }
        #expect(reopened.newestTerm == 9)
        _ = try await reopened.set(p("/c"), .number(4))
        #expect(try reopened.readLogEntries(after: nil, limit: 10).map(\.term) == [7, 9, 9])
    }

    @Test func aReplicaRefusesEntriesOfAnOlderTerm() async throws {
        let old = TemporaryDirectory("terms-deposed")
        let new = TemporaryDirectory("terms-new")
        let replicaDirectory = TemporaryDirectory("terms-replica")
        defer {
            old.remove()
            new.remove()
            replicaDirectory.remove()
        }
        // Two histories that share nothing but their start: the new leader (term 12) and a
        // deposed one that kept writing in term 5 after it.
        let newFence = TermFence()
        newFence.term.withLock { $0 = 12 }
        let oldFence = TermFence()
        oldFence.term.withLock { $0 = 5 }
        let newLeader = try self.openLeader(new, newFence)
        defer { newLeader.close() }
        let deposed = try self.openLeader(old, oldFence)
        defer { deposed.close() }
        _ = try await newLeader.set(p("/n"), .number(1))
        // A later millisecond: within the same one the two engines' ids could fall either way.
        try await Task.sleep(for: .milliseconds(3))
        _ = try await deposed.set(p("/o"), .number(1))  // written later: a later id, an older term
        let newEntries = try newLeader.readLogEntries(after: nil, limit: 10)
        let deposedEntries = try deposed.readLogEntries(after: nil, limit: 10)
        #expect(newEntries.map(\.term) == [12])
        #expect(deposedEntries.map(\.term) == [5])
        #expect(newEntries[0].id < deposedEntries[0].id)

        var options = EngineOptions(durability: .none)
        options.leader = "/run/eddy/replication.sock"
        let replica = try Engine.open(directory: replicaDirectory.path, options: options, logger: quietLogger)
        defer { replica.close() }
        try await replica.applyReplicated(newEntries)
        #expect(replica.newestTerm == 12)
        await expectEddyError(.notLeader, mentioning: ["term 5", "term 12", "deposed"]) { try await replica.applyReplicated(deposedEntries) }
        #expect(try replica.readLogEntries(after: nil, limit: 10) == newEntries)
        #expect(try await replica.get(p("/o")) == .null)
    }
}
