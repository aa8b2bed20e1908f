// The data directory: one database per namespace (isolated from each other), namespace name
// rules, and the directory lock that keeps a second daemon or offline command out.

import EddyEngine
import EddyModel
import EddyTesting
import Testing

@Suite struct DataDirectoryTests {
    @Test func namespacesAreIsolated() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = try DataDirectory(path: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { data.close() }
        let a = try data.engine(namespace: "alpha")
        let b = try data.engine(namespace: "Beta-2_x")
        let fallback = try data.engine(namespace: DataDirectory.defaultNamespace)
        #expect(try data.engine(namespace: "alpha") === a, "a namespace is opened once")
        #expect(a !== b)
        #expect(a.databaseID != b.databaseID)
        _ = try await a.set(p("/shared/key"), .string("from alpha"))
        _ = try await b.set(p("/shared/key"), .string("from beta"))
        _ = try await b.push(p("/only/beta"), .bool(true))
        #expect(try await a.get(p("/shared/key")) == .string("from alpha"))
        #expect(try await b.get(p("/shared/key")) == .string("from beta"))
        #expect(try await a.get(p("/only")) == .null)
        #expect(try await fallback.get(.root) == .null)
        #expect(try a.logCount() == 1)
        #expect(try b.logCount() == 2)
        #expect(try fallback.lastLogID() == nil)
        #expect(data.namespacesOnDisk() == ["Beta-2_x", "alpha", "default"])
    }

    @Test func namespacesPersistAcrossReopen() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        do {
            let data = try DataDirectory(path: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
            _ = try await data.engine(namespace: "one").set(p("/x"), .number(1))
            _ = try await data.engine(namespace: "two").set(p("/x"), .number(2))
            data.close()
        }
        let data = try DataDirectory(path: directory.path, options: EngineOptions(durability: .sync), logger: quietLogger)
        defer { data.close() }
        #expect(data.namespacesOnDisk() == ["one", "two"])
        #expect(try await data.engine(namespace: "one").get(p("/x")) == .number(1))
        #expect(try await data.engine(namespace: "two").get(p("/x")) == .number(2))
    }

    @Test(arguments: [
        "", "-leading-dash", "_leading_underscore", "has.dot", "has/slash", "..", ".", "has space", "ümlaut", "tab\t",
        String(repeating: "n", count: 64), "semi;colon", "a$", "😀",
    ])
    func badNamespaceNamesAreRefused(_ name: String) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = try DataDirectory(path: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { data.close() }
        expectEddyErrorSync(.invalidArgument, mentioning: ["\"\(name)\"", "namespace"]) { try DataDirectory.validateNamespace(name) }
        expectEddyErrorSync(.invalidArgument, mentioning: ["\"\(name)\""]) { _ = try data.engine(namespace: name) }
        #expect(data.namespacesOnDisk().isEmpty, "nothing was created for \(name.debugDescription)")
    }

    @Test(arguments: ["a", "Z", "0", "default", "a-b_c", "x9", String(repeating: "n", count: 63)])
    func goodNamespaceNamesAreAccepted(_ name: String) throws {
        try DataDirectory.validateNamespace(name)
    }

    @Test func aSecondDataDirectoryOnTheSamePathIsInUse() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let first = try DataDirectory(path: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        _ = try first.engine(namespace: "default")
        expectEddyErrorSync(.inUse, mentioning: [directory.path, "in use"]) {
            _ = try DataDirectory(path: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        }
        // Still refused on a second try (the failed attempt released nothing of the first).
        expectEddyErrorSync(.inUse) {
            _ = try DataDirectory(path: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        }
        first.close()
        let second = try DataDirectory(path: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        _ = try second.engine(namespace: "default")
        second.close()
        second.close()  // idempotent
        let third = try DataDirectory(path: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        third.close()
    }

    @Test func aClosedDataDirectoryOpensNoMoreEngines() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = try DataDirectory(path: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        let engine = try data.engine(namespace: "open")
        _ = try await engine.set(p("/x"), .number(1))
        data.close()
        expectEddyErrorSync(.shuttingDown, mentioning: [directory.path]) { _ = try data.engine(namespace: "open") }
        expectEddyErrorSync(.shuttingDown) { _ = try data.engine(namespace: "other") }
        await expectEddyError(.shuttingDown) { _ = try await engine.set(p("/x"), .number(2)) }
        #expect(data.namespacesOnDisk() == ["open"])
    }

    @Test func anEngineOnAnOpenDatabaseIsInUse() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        expectEddyErrorSync(.inUse, mentioning: [directory.path]) {
            _ = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        }
        engine.close()
        let again = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        again.close()
    }
}
