// What the leader's log server learns about namespaces without holding them open (for followers
// that park idle namespaces): every durable commit of any namespace, open now or opened later,
// even one closed for room and opened again, reaches `observeCommits` with its newest entry,
// until the observer is removed; `newestLogIDIfKnown` answers for open namespaces and for ones
// closed for room, and only those.

import EddyEngine
import EddyModel
import EddyTesting
import Synchronization
import Testing

@Suite struct NamespaceCommitObserverTests {
    @Test func commitsOfEveryNamespaceReachTheObserverUntilRemoved() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = try DataDirectory(path: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
        defer { data.close() }
        let before = try data.lease(namespace: "opened-before")
        defer { before.release() }
        let seen = Mutex<[String: LogID]>([:])
        let token = data.observeCommits { namespace, newest in seen.withLock { $0[namespace] = newest } }
        let first = try #require(try await before.engine.set(p("/a"), .number(1)).committed?.logID)
        let later = try data.lease(namespace: "opened-later")
        let second = try #require(try await later.engine.set(p("/b"), .number(2)).committed?.logID)
        later.release()
        // Observers run after the group is durable, perhaps just after the write's answer.
        try await waitUntil { seen.withLock { $0 } == ["opened-before": first, "opened-later": second] }

        data.stopObservingCommits(token)
        let third = try #require(try await before.engine.set(p("/a"), .number(3)).committed?.logID)
        try await waitUntil { (try? before.engine.lastLogID()) == third }
        try await Task.sleep(for: .milliseconds(50))
        #expect(seen.withLock { $0["opened-before"] } == first, "nothing reaches a removed observer")
    }

    @Test func aNamespaceClosedForRoomIsObservedAgainWhenReopenedAndItsNewestEntryStaysKnown() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = try DataDirectory(path: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
        defer { data.close() }
        _ = try data.engine(namespace: DataDirectory.defaultNamespace)
        let seen = Mutex<[String: LogID]>([:])
        _ = data.observeCommits { namespace, newest in seen.withLock { $0[namespace] = newest } }
        var newest: LogID?
        do {
            let lease = try data.lease(namespace: "first")
            newest = try await lease.engine.set(p("/v"), .number(1)).committed?.logID
            lease.release()
        }
        #expect(data.newestLogIDIfKnown(namespace: "first") == .some(newest), "open: known")
        #expect(data.newestLogIDIfKnown(namespace: "never-opened") == nil, "not opened: unknown")
        // Fill every other place: "first", the least recently used, is closed for room.
        for i in 0..<(Limits.namespacesOpenMax - 1) {
            try data.lease(namespace: "filler-\(i)").release()
        }
        #expect(!data.openNamespaces.contains("first"))
        #expect(data.newestLogIDIfKnown(namespace: "first") == .some(newest), "closed for room: still known")
        // Reopened (a new engine): its commits are observed too.
        let lease = try data.lease(namespace: "first")
        defer { lease.release() }
        let again = try #require(try await lease.engine.set(p("/v"), .number(2)).committed?.logID)
        try await waitUntil { seen.withLock { $0["first"] } == again }
        #expect(data.newestLogIDIfKnown(namespace: "first") == .some(.some(again)))
    }
}
