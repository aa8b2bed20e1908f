// Security rules enforced by the engine: writes are checked in the committer against the tree
// exactly as the earlier writes of the log left it (data, root, newData with server values), a
// denied write changes nothing and is not logged, reads and listens are checked before they
// read, and a rules change cancels the listens it no longer allows. A model-based test compares
// random writes by random users against a reference that applies Firebase's semantics to a
// Value in memory (the seed is printed; set EDDY_ACCESS_SEED to replay it).

import EddyEngine
import EddyModel
import EddyTesting
import Foundation
import Synchronization
import Testing

@Suite struct EngineAccessTests {
    static let rules = json(
        #"""
        {"rules": {
          "users": {"$uid": {".read": "$uid === auth.uid", ".write": "$uid === auth.uid && (!data.exists() || data.child('owner').val() === auth.uid)",
                             "count": {".validate": "newData.isNumber() && (!data.exists() || newData.val() === data.val() + 1)"}}},
          "stamps": {"$id": {".write": "auth != null", ".validate": "newData.val() === now"}},
          "open": {".read": true, ".write": true}
        }}
        """#)

    static func user(_ uid: String) -> Access { .client(auth: .map(["uid": .string(uid)])) }

    func withRules<T>(_ body: (Engine) async throws -> T) async throws -> T {
        let directory = TemporaryDirectory("access")
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { engine.close() }
        _ = try await engine.setRules(Self.rules)
        return try await body(engine)
    }

    @Test func writesAreCheckedAgainstTheTreeTheLogLeftAndDenialsLeaveNoTrace() async throws {
        try await self.withRules { engine in
            let alice = Self.user("alice")
            _ = try await engine.write(.set(p("/users/alice"), json(#"{"owner": "alice", "count": 1}"#)), access: alice)
            let logged = try await engine.logEntries(after: nil, limit: 100).count
            await expectEddyError(.permissionDenied, mentioning: ["Permission denied"]) {
                _ = try await engine.write(.set(p("/users/alice/count"), .number(5)), access: alice)  // not +1
            }
            await expectEddyError(.permissionDenied) {
                _ = try await engine.write(.set(p("/users/bob/x"), .number(1)), access: alice)
            }
            await expectEddyError(.permissionDenied) {
                _ = try await engine.write(.set(p("/users/alice"), .number(1)), access: .unauthenticated)
            }
            #expect(try await engine.logEntries(after: nil, limit: 100).count == logged, "a denied write is not logged")
            _ = try await engine.write(.set(p("/users/alice/count"), .number(2)), access: alice)
            // Server values are resolved before the rules see newData.
            _ = try await engine.write(.set(p("/stamps/a"), json(#"{".sv": "timestamp"}"#)), access: alice)
            // A multi-path update: every path must be allowed.
            await expectEddyError(.permissionDenied) {
                _ = try await engine.write(
                    .update(p("/"), [LogEntry.Change(path: p("open/x"), value: .number(1)), LogEntry.Change(path: p("users/bob/y"), value: .number(1))]),
                    access: alice)
            }
            #expect(try await engine.get(p("/open"), access: .admin) == .null, "nothing of a denied update applied")
            #expect(try await engine.get(p("/users/alice/count"), access: alice) == .number(2))
            await expectEddyError(.permissionDenied) { _ = try await engine.get(p("/users"), access: alice) }
            #expect(try await engine.get(p("/users"), access: .admin) != .null, "the admin bypasses the rules")
        }
    }

    @Test func listensAreCheckedAndCancelledWhenTheRulesChange() async throws {
        try await self.withRules { engine in
            let alice = Self.user("alice")
            _ = try await engine.write(.set(p("/users/alice"), json(#"{"owner": "alice"}"#)), access: alice)
            await expectEddyError(.permissionDenied) { _ = try await engine.listen(p("/users/bob"), access: alice, sink: { _ in }) }
            let received = ReceivedAccessEvents()
            let kept = ReceivedAccessEvents()
            _ = try await engine.listen(p("/users/alice"), access: alice, sink: received.sink)
            _ = try await engine.listen(p("/users/alice"), access: .admin, sink: kept.sink)
            var locked = Self.rules
            locked["rules"]["users"]["$uid"][".read"] = .bool(false)
            _ = try await engine.setRules(locked)
            try await waitUntil { received.kinds.contains(.cancel) }
            #expect(received.kinds.last == .cancel)
            _ = try await engine.write(.set(p("/users/alice/more"), .number(1)), access: .admin)
            try await waitUntil { kept.kinds.filter { $0 == .value }.count >= 2 }
            #expect(!received.kinds.dropLast().contains(.cancel) && received.kinds.filter { $0 == .value }.count == 1, "the cancelled listen hears nothing more")
            #expect(!kept.kinds.contains(.cancel), "the admin's listen on the same location stays")
        }
    }

    // Model-based: random writes by random users against a reference in memory.
    @Test func randomWritesAgreeWithAReference() async throws {
        let seed = ProcessInfo.processInfo.environment["EDDY_ACCESS_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
        print("EngineAccessTests.randomWritesAgreeWithAReference seed \(seed) (EDDY_ACCESS_SEED)")
        var random = SeededGenerator(seed: seed)
        let security = try SecurityRules.compile(Self.rules["rules"])
        try await self.withRules { engine in
            var tree: Value = .null
            var outcomes = (allowed: 0, denied: 0)
            let users = ["alice", "bob", "carol"]
            for step in 0..<300 {
                let actor = users.randomElement(using: &random)!
                let target = users.randomElement(using: &random)!
                let path: Path
                let value: Value
                switch Int.random(in: 0..<4, using: &random) {
                case 0: (path, value) = (p("/users/\(target)"), json(#"{"owner": "\#(target)", "count": 1}"#))
                case 1:
                    let current = tree.child(at: p("/users/\(target)/count"))
                    let next: Double = Bool.random(using: &random) ? ((current.numberValue ?? 0) + 1) : 7
                    (path, value) = (p("/users/\(target)/count"), .number(next))
                case 2: (path, value) = (p("/users/\(target)/owner"), .string(users.randomElement(using: &random)!))
                default: (path, value) = (p("/open/\(step % 5)"), .number(Double(step)))
                }
                let newTree = tree.setting(value, at: path)
                let context = RuleContext(auth: .map(["uid": .string(actor)]), now: 0, tree: RuleTree(tree), newTree: RuleTree(newTree))
                let expected = security.canWrite(path, context)
                var allowed = true
                do {
                    _ = try await engine.write(.set(path, value), access: Self.user(actor))
                } catch let error as EddyError where error.code == .permissionDenied {
                    allowed = false
                }
                #expect(allowed == expected, "seed \(seed) step \(step): \(actor) sets \(path) = \(text(value))")
                if allowed { tree = newTree }
                if allowed { outcomes.allowed += 1 } else { outcomes.denied += 1 }
            }
            #expect(outcomes.allowed > 30 && outcomes.denied > 30, "both outcomes are exercised: \(outcomes)")
            #expect(try await engine.get(p("/"), access: .admin) == tree, "seed \(seed)")
        }
    }
}

private extension Value {
    var numberValue: Double? {
        if case .number(let n) = self { return n }
        return nil
    }

    subscript(_ key: String) -> Value {
        get { self.child(at: Path(validatedKeys: [key])) }
        set { self = self.setting(newValue, at: Path(validatedKeys: [key])) }
    }
}

final class ReceivedAccessEvents: Sendable {
    private let events = Mutex<[ChildEvent.Kind]>([])
    var sink: ChildEventSink { { batch in self.events.withLock { $0 += batch.map(\.kind) } } }
    var kinds: [ChildEvent.Kind] { self.events.withLock { $0 } }
}

func waitUntil(timeoutSeconds: Double = 10, _ condition: () -> Bool) async throws {
    let deadline = Date().addingTimeInterval(timeoutSeconds)
    while !condition() {
        guard Date() < deadline else { throw EddyError(.unavailable, "condition not met within \(timeoutSeconds) s") }
        try await Task.sleep(for: .milliseconds(5))
    }
}
