// Namespaces beyond `Limits.namespacesOpenMax`: the least recently used one nobody holds is
// closed to make room (its data stays and reopens on next use); held ones, the default
// namespace and one building an index stay open; with every open one held, opening another is
// refused naming the limit.

import EddyEngine
import EddyModel
import EddyTesting
import Testing

@Suite struct NamespaceLeaseTests {
    static func name(_ i: Int) -> String { "ns-\(i)" }

    /// Opens the default namespace and leases `ns-0` ... until `namespacesOpenMax` are open.
    static func holdEveryOpenNamespace(_ data: DataDirectory) throws -> [EngineLease] {
        _ = try data.engine(namespace: DataDirectory.defaultNamespace)
        return try (0..<(Limits.namespacesOpenMax - 1)).map { i in try data.lease(namespace: Self.name(i)) }
    }

    @Test func idleNamespacesCloseToMakeRoomAndReopenWithTheirData() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = try DataDirectory(path: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
        defer { data.close() }
        _ = try data.engine(namespace: DataDirectory.defaultNamespace)
        let count = Limits.namespacesOpenMax + 6
        for i in 0..<count {
            let lease = try data.lease(namespace: Self.name(i))
            _ = try await lease.engine.set(p("/value"), .number(Double(i)))
            lease.release()
            #expect(data.openNamespaces.count <= Limits.namespacesOpenMax)
        }
        #expect(data.openNamespaces.count == Limits.namespacesOpenMax)
        #expect(data.openNamespaces.contains(DataDirectory.defaultNamespace), "the default namespace is never closed for room")
        // The first ones were closed (least recently used); the newest are open.
        #expect(!data.openNamespaces.contains(Self.name(0)))
        #expect(data.openNamespaces.contains(Self.name(count - 1)))
        for i in 0..<count {
            let lease = try data.lease(namespace: Self.name(i))
            defer { lease.release() }
            #expect(try await lease.engine.get(p("/value")) == .number(Double(i)), "namespace \(Self.name(i)) kept its data")
            #expect(try lease.engine.logCount() == 1)
        }
        #expect(data.namespacesOnDisk().count == count + 1)
    }

    @Test func heldNamespacesStayOpenAndTheLeastRecentlyUsedIdleOneCloses() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = try DataDirectory(path: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { data.close() }
        let held = try Self.holdEveryOpenNamespace(data)
        // Every open namespace is held: one more is refused, naming it and the limit.
        expectEddyErrorSync(.busy, mentioning: ["extra", "namespacesOpenMax", "\(Limits.namespacesOpenMax)"]) {
            _ = try data.lease(namespace: "extra")
        }
        #expect(!data.openNamespaces.contains("extra"))
        #expect(data.namespacesOnDisk().count == Limits.namespacesOpenMax, "nothing was created for the refused namespace")
        // Two leases of one namespace: it stays held until both are released.
        let second = try data.lease(namespace: Self.name(5))
        held[5].release()
        expectEddyErrorSync(.busy) { _ = try data.lease(namespace: "extra") }
        second.release()
        // Released 10 after 5, then 5 used again: 10 is the least recently used idle one.
        held[10].release()
        let again = try data.lease(namespace: Self.name(5))
        again.release()
        let extra = try data.lease(namespace: "extra")
        #expect(!data.openNamespaces.contains(Self.name(10)))
        #expect(data.openNamespaces.contains(Self.name(5)))
        _ = try await extra.engine.set(p("/x"), .bool(true))
        // The held ones were not touched: their engines still work.
        for (i, lease) in held.enumerated() where i != 5 && i != 10 {
            _ = try await lease.engine.set(p("/i"), .number(Double(i)))
        }
        // A namespace released twice counts once (release is idempotent).
        held[10].release()
        extra.release()
        extra.release()
        let other = try data.lease(namespace: "other")
        #expect(!data.openNamespaces.contains(Self.name(5)), "5 was used before extra was leased")
        #expect(data.openNamespaces.contains("extra"))
        other.release()
        for lease in held { lease.release() }
    }

    @Test func aDroppedLeaseReleasesItsNamespace() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = try DataDirectory(path: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { data.close() }
        var held = try Self.holdEveryOpenNamespace(data)
        expectEddyErrorSync(.busy) { _ = try data.lease(namespace: "extra") }
        held.removeLast()  // dropped without release(): its deinit releases it
        let extra = try data.lease(namespace: "extra")
        #expect(!data.openNamespaces.contains(Self.name(Limits.namespacesOpenMax - 2)))
        extra.release()
        for lease in held { lease.release() }
    }

    @Test func aPassOverEveryOpenNamespaceHoldsOneAtATime() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = try DataDirectory(path: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { data.close() }
        for lease in try Self.holdEveryOpenNamespace(data) { lease.release() }
        #expect(data.openNamespaces.count == Limits.namespacesOpenMax)
        var visited: [String] = []
        var openedMeanwhile = false
        data.forEachOpenEngine { lease in
            visited.append(lease.namespace)
            guard !openedMeanwhile else { return }
            // Every place is taken, but only this namespace is held: another opens.
            if let other = try? data.lease(namespace: "opened-during-the-pass") {
                openedMeanwhile = true
                other.release()
            }
        }
        #expect(openedMeanwhile, "a namespace opened while the pass held one")
        #expect(visited.count >= Limits.namespacesOpenMax - 1)
        #expect(visited == visited.sorted())
    }
}
