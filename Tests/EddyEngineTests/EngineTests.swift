// Write and read semantics of the engine over a real RocksDB: set/get/shallow/update/push/remove,
// Firebase's null and empty-object rules, primitives and their descendants, arrays, validation
// through the engine (nothing refused is applied or logged), server values and conditional
// writes. Firebase behaviour referenced: https://firebase.google.com/docs/database/rest/save-data
// and https://firebase.google.com/docs/database/web/read-and-write.

import EddyEngine
import EddyModel
import EddyTesting
import Testing

@Suite struct EngineTests {
    // MARK: set / get / shallow

    @Test func setThenGetAtEveryDepth() async throws {
        try await withEngine { engine in
            let outcome = try await engine.set(p("/users/ada"), json(#"{"name":"Ada","born":1815,"alive":false}"#))
            let committed = try #require(outcome.committed)
            #expect(committed.value == json(#"{"name":"Ada","born":1815,"alive":false}"#))
            #expect(committed.pushedKey == nil)
            #expect(try await engine.get(p("/users/ada/name")) == .string("Ada"))
            #expect(try await engine.get(p("/users/ada/born")) == .number(1815))
            #expect(try await engine.get(p("/users/ada/alive")) == .bool(false))
            #expect(text(try await engine.get(p("/users"))) == #"{"ada":{"alive":false,"born":1815,"name":"Ada"}}"#)
            #expect(try await engine.get(.root) == json(#"{"users":{"ada":{"alive":false,"born":1815,"name":"Ada"}}}"#))
            #expect(try await engine.get(p("/users/bob")) == .null)
            #expect(try await engine.get(p("/users/ada/name/deeper")) == .null, "below a primitive there is nothing")
            // A set replaces the whole subtree.
            _ = try await engine.set(p("/users/ada"), json(#"{"name":"Lovelace"}"#))
            #expect(try await engine.get(p("/users/ada")) == json(#"{"name":"Lovelace"}"#))
        }
    }

    @Test func shallowReads() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/a"), json(#"{"x":{"deep":{"er":1}},"y":2,"0":"zero","é😀":true}"#))
            #expect(try await engine.getShallow(p("/a")) == json(#"{"x":true,"y":true,"0":true,"é😀":true}"#))
            #expect(try await engine.getShallow(p("/a/y")) == .number(2), "a primitive is returned as is")
            #expect(try await engine.getShallow(p("/a/x")) == json(#"{"deep":true}"#))
            #expect(try await engine.getShallow(p("/nothing")) == .null)
            #expect(try await engine.getShallow(.root) == json(#"{"a":true}"#))
            #expect(try engine.readShallow(p("/a/x/deep")) == json(#"{"er":true}"#))
        }
    }

    @Test(arguments: [#"{}"#, #"null"#, #"{"x":null}"#, #"{"x":{},"y":{"z":null}}"#])
    func writingAnEmptyObjectOrNullDeletes(_ body: String) async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/a/b"), json(#"{"c":1,"d":2}"#))
            _ = try await engine.set(p("/keep"), .number(1))
            let outcome = try await engine.set(p("/a/b"), json(body))
            #expect(outcome.committed?.value == .null, "writing \(body)")
            #expect(try await engine.get(p("/a/b")) == .null, "writing \(body)")
            #expect(try await engine.get(p("/a")) == .null, "a node whose last child is removed disappears (\(body))")
            #expect(try await engine.get(.root) == json(#"{"keep":1}"#))
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test func nullChildrenInsideAValueArePruned() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/a"), json(#"{"x":1,"y":null,"z":{},"w":{"v":null,"u":2}}"#))
            #expect(try await engine.get(p("/a")) == json(#"{"x":1,"w":{"u":2}}"#))
        }
    }

    @Test func settingBelowAPrimitiveReplacesIt() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/a"), .string("leaf"))
            let committed = try #require(try await engine.set(p("/a/b/c"), .number(2)).committed)
            #expect(try await engine.get(p("/a")) == json(#"{"b":{"c":2}}"#))
            let entry = try #require(try engine.readLogEntries(after: nil, limit: 10).last)
            #expect(entry.id == committed.logID)
            #expect(entry.before.contains(LogEntry.BeforeImage(path: p("/a"), value: .string("leaf"))), "\(entry.before)")
            #expect(entry.before.contains(LogEntry.BeforeImage(path: p("/a/b/c"), value: .null)), "\(entry.before)")
            #expect(entry.before.count == 2)
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test func settingAPrimitiveReplacesASubtree() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/a"), json(#"{"b":{"c":1,"d":[1,2]},"e":true}"#))
            _ = try await engine.set(p("/a/b"), .bool(true))
            #expect(try await engine.get(p("/a")) == json(#"{"b":true,"e":true}"#))
            #expect(try await engine.get(p("/a/b/c")) == .null)
            let entry = try #require(try engine.readLogEntries(after: nil, limit: 10).last)
            #expect(entry.before == [LogEntry.BeforeImage(path: p("/a/b"), value: json(#"{"c":1,"d":[1,2]}"#))])
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test func removingBelowAPrimitiveChangesNothing() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/a"), .number(5))
            _ = try await engine.remove(p("/a/b"))
            _ = try await engine.set(p("/a/b/c"), .null)
            _ = try await engine.set(p("/a/x"), json("{}"))
            _ = try await engine.update(p("/a"), [.init(path: p("q"), value: .null)])
            #expect(try await engine.get(p("/a")) == .number(5))
            #expect(try await engine.get(.root) == json(#"{"a":5}"#))
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test func arraysAreStoredAsObjectsAndRenderedOnRead() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/arr"), json(#"[10,"b",{"c":true},[1,2]]"#))
            let stored = try await engine.get(p("/arr"))
            #expect(stored == .object(["0": .number(10), "1": .string("b"), "2": json(#"{"c":true}"#), "3": json(#"{"0":1,"1":2}"#)]))
            #expect(text(stored) == #"[10,"b",{"c":true},[1,2]]"#)
            #expect(try await engine.get(p("/arr/1")) == .string("b"))
            #expect(try await engine.get(p("/arr/3/1")) == .number(2))
            // A hole renders as null while the largest index < 2 × count.
            _ = try await engine.remove(p("/arr/1"))
            #expect(text(try await engine.get(p("/arr"))) == #"[10,null,{"c":true},[1,2]]"#)
            // Too sparse: rendered as an object.
            _ = try await engine.set(p("/sparse"), json(#"{"0":"a","7":"b"}"#))
            #expect(text(try await engine.get(p("/sparse"))) == #"{"0":"a","7":"b"}"#)
            // Arrays with a null element store no record for it.
            _ = try await engine.set(p("/holes"), json(#"[1,null,3]"#))
            #expect(text(try await engine.get(p("/holes"))) == #"[1,null,3]"#)
            #expect(try await engine.getShallow(p("/holes")) == json(#"{"0":true,"2":true}"#))
            // Integer-like keys come back in numeric order.
            _ = try await engine.set(p("/ordered"), json(#"{"10":"j","9":"i","a":"x","-1":"m","01":"o"}"#))
            #expect(text(try await engine.get(p("/ordered"))) == #"{"-1":"m","01":"o","9":"i","10":"j","a":"x"}"#)
        }
    }

    @Test func primitiveAtTheRoot() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/a/b"), .number(1))
            _ = try await engine.set(.root, .string("just a string"))
            #expect(try await engine.get(.root) == .string("just a string"))
            #expect(try await engine.getShallow(.root) == .string("just a string"))
            #expect(try await engine.get(p("/a")) == .null)
            #expect(try engine.verify().isHealthy)
            // Removing below the root primitive changes nothing.
            _ = try await engine.remove(p("/a"))
            #expect(try await engine.get(.root) == .string("just a string"))
            // Setting a child replaces the root primitive, and the before-image records it.
            _ = try await engine.set(p("/x"), .bool(true))
            #expect(try await engine.get(.root) == json(#"{"x":true}"#))
            let entry = try #require(try engine.readLogEntries(after: nil, limit: 10).last)
            #expect(entry.before.contains(LogEntry.BeforeImage(path: .root, value: .string("just a string"))))
            _ = try await engine.set(.root, .number(0))
            #expect(try await engine.get(.root) == .number(0))
            _ = try await engine.remove(.root)
            #expect(try await engine.get(.root) == .null)
            #expect(try engine.verify().isHealthy)
        }
    }

    // MARK: update / push / remove

    @Test func updateSetsEachPathAndLeavesSiblings() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/u"), json(#"{"a":{"x":1,"y":2},"b":"keep","c":3}"#))
            let committed = try await engine.update(
                p("/u"),
                [
                    .init(path: p("a/x"), value: .number(10)), .init(path: p("c"), value: .null),
                    .init(path: p("d/e"), value: json(#"{"f":[true]}"#)),
                ])
            #expect(try await engine.get(p("/u")) == json(#"{"a":{"x":10,"y":2},"b":"keep","d":{"e":{"f":[true]}}}"#))
            #expect(committed.value == .object(["a/x": .number(10), "c": .null, "d/e": json(#"{"f":{"0":true}}"#)]))
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test func updateBelowAPrimitiveReplacesIt() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/u"), .number(1))
            _ = try await engine.update(p("/u"), [.init(path: p("a"), value: .number(2)), .init(path: p("b/c"), value: .number(3))])
            #expect(try await engine.get(p("/u")) == json(#"{"a":2,"b":{"c":3}}"#))
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test func pushCreatesIncreasingChildKeys() async throws {
        let clock = ManualClock()
        try await withEngine(clock: clock) { engine in
            var keys: [String] = []
            for i in 0..<5 {
                let now = clock.nowMilliseconds()
                let committed = try await engine.push(p("/list"), .number(Double(i)))
                let key = try #require(committed.pushedKey)
                #expect(key == committed.logID.rawValue, "a push's child key is its log id")
                #expect(key.utf8.count == 20)
                #expect(LogID(key)?.timestampMilliseconds == now)
                keys.append(key)
                if i == 2 { clock.advance(by: 5) }
            }
            #expect(keys == keys.sorted(), "push ids sort chronologically")
            #expect(Set(keys).count == 5)
            let list = try await engine.get(p("/list"))
            for (i, key) in keys.enumerated() { #expect(list[key] == .number(Double(i))) }
            _ = try await engine.push(p("/obj"), json(#"{"a":{"b":1}}"#))
            let obj = try await engine.get(p("/obj"))
            guard case .object(let children) = obj else {
                Issue.record("expected an object, got \(obj)")
                return
            }
            #expect(Array(children.values) == [json(#"{"a":{"b":1}}"#)])
        }
    }

    @Test func pushBelowAPrimitiveReplacesIt() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/list"), .string("was a string"))
            let key = try #require(try await engine.push(p("/list"), .bool(true)).pushedKey)
            #expect(try await engine.get(p("/list")) == .object([key: .bool(true)]))
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test func removeDeletesTheSubtreeAndEmptyParents() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/a/b/c"), json(#"{"d":1,"e":2}"#))
            _ = try await engine.set(p("/a/z"), .number(3))
            let outcome = try await engine.remove(p("/a/b"))
            #expect(outcome.committed?.value == .null)
            #expect(try await engine.get(.root) == json(#"{"a":{"z":3}}"#))
            _ = try await engine.remove(p("/a/z"))
            #expect(try await engine.get(.root) == .null)
            _ = try await engine.remove(p("/never/was"))
            #expect(try await engine.get(.root) == .null)
            #expect(try engine.verify().isHealthy)
        }
    }

    // MARK: update conflicts

    @Test func updateRefusesAPathTogetherWithItsAncestor() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/u"), json(#"{"a":{"b":1}}"#))
            let lastBefore = try engine.lastLogID()
            await expectEddyError(.invalidPath, mentioning: ["/u/a", "/u/a/b"]) {
                _ = try await engine.update(
                    p("/u"),
                    [.init(path: p("z"), value: .number(9)), .init(path: p("a/b"), value: .number(2)), .init(path: p("a"), value: .number(3))]
                )
            }
            await expectEddyError(.invalidPath, mentioning: ["/u/x/y", "twice"]) {
                _ = try await engine.update(
                    p("/u"), [.init(path: p("x/y"), value: .number(2)), .init(path: p("x/y"), value: .number(3))])
            }
            // The check is by keys, not by string prefix: "a" and "ab" are siblings.
            _ = try await engine.update(p("/u"), [.init(path: p("a"), value: .number(1)), .init(path: p("ab"), value: .number(2))])
            #expect(try await engine.get(p("/u")) == json(#"{"a":1,"ab":2}"#))
            let lastAfter = try engine.lastLogID()
            #expect(lastAfter != lastBefore)
            let entries = try engine.readLogEntries(after: lastBefore, limit: 10)
            #expect(entries.count == 1, "the refused updates logged nothing")
        }
    }

    @Test func refusedUpdateAppliesNothingAndLogsNothing() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/u"), json(#"{"a":1}"#))
            let lastBefore = try engine.lastLogID()
            await expectEddyError(.invalidPath, mentioning: ["/u/k", "/u/k/deep"]) {
                _ = try await engine.update(
                    p("/u"), [.init(path: p("new"), value: .number(1)), .init(path: p("k/deep"), value: .number(1)), .init(path: p("k"), value: .null)])
            }
            #expect(try engine.lastLogID() == lastBefore)
            #expect(try await engine.get(p("/u")) == json(#"{"a":1}"#))
        }
    }

    // MARK: validation through the engine

    /// Runs `write`, expects a refusal with `code` mentioning `fragments`, and checks that
    /// neither the tree nor the log changed.
    func expectRefused(
        _ engine: Engine, _ code: EddyError.Code, mentioning fragments: [String], _ what: String,
        sourceLocation: SourceLocation = #_sourceLocation, _ write: () async throws -> Void
    ) async throws {
        let lastBefore = try engine.lastLogID()
        let rootBefore = try await engine.get(.root)
        await expectEddyError(code, mentioning: fragments, what, sourceLocation: sourceLocation, write)
        #expect(try engine.lastLogID() == lastBefore, "nothing logged: \(what)", sourceLocation: sourceLocation)
        #expect(try await engine.get(.root) == rootBefore, "nothing applied: \(what)", sourceLocation: sourceLocation)
    }

    @Test func invalidKeysAreRefused() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/existing"), .number(1))
            for bad in ["a.b", "a$", "#", "[x", "y]", "a/b", "tab\t", "del\u{7F}", "nul\u{0}", ""] {
                try await expectRefused(engine, .invalidKey, mentioning: [], "set with child key \(bad.debugDescription)") {
                    _ = try await engine.set(p("/existing"), .object(["ok": .number(1), bad: .number(2)]))
                }
                try await expectRefused(engine, .invalidKey, mentioning: [], "push with key \(bad.debugDescription)") {
                    _ = try await engine.push(p("/list"), .object([bad: .number(2)]))
                }
                try await expectRefused(engine, .invalidKey, mentioning: [], "update with key \(bad.debugDescription)") {
                    _ = try await engine.update(p("/u"), [.init(path: p("fine"), value: .object(["nested": .object([bad: .bool(true)])]))])
                }
            }
            try await expectRefused(engine, .invalidKey, mentioning: ["a.b", "\".\""], "message names key and rule") {
                _ = try await engine.set(p("/x"), .object(["a.b": .number(1)]))
            }
            try await expectRefused(engine, .invalidValue, mentioning: ["priority of /x", "a number, a string"], "a priority that is neither") {
                _ = try await engine.set(p("/x"), .object([".priority": .bool(true), "v": .number(2)]))
            }
        }
    }

    @Test func depthLimitIsEnforced() async throws {
        try await withEngine { engine in
            let keys32 = (0..<32).map { "k\($0)" }
            let depth32 = Path(validatedKeys: keys32)
            // Exactly 32 keys deep is fine.
            _ = try await engine.set(depth32, .number(1))
            #expect(try await engine.get(depth32) == .number(1))
            try await expectRefused(engine, .invalidPath, mentioning: ["33", "pathDepthMax"], "value one level too deep") {
                _ = try await engine.set(depth32, .object(["k32": .number(1)]))
            }
            try await expectRefused(engine, .invalidPath, mentioning: ["33", "pathDepthMax"], "location 33 deep") {
                _ = try await engine.set(depth32.appending("k32"), .number(1))
            }
            try await expectRefused(engine, .invalidPath, mentioning: ["33", "pathDepthMax"], "push child 33 deep") {
                _ = try await engine.push(depth32, .number(1))
            }
            try await expectRefused(engine, .invalidPath, mentioning: ["33", "pathDepthMax"], "update change 33 deep") {
                _ = try await engine.update(depth32.parent!, [.init(path: p("k31/k32"), value: .number(1))])
            }
            try await expectRefused(engine, .invalidPath, mentioning: ["pathDepthMax"], "remove 33 deep") {
                _ = try await engine.remove(depth32.appending("k32"))
            }
        }
    }

    /// Firebase limits keys (768 bytes each) and depth (32), not a path's bytes: 32 keys of 768
    /// bytes are stored, read, indexed, listed and logged like any other path.
    @Test func longKeysAtEveryDepthAreStored() async throws {
        try await withEngine { engine in
            // 768 bytes each; every other one ends in "é" (2 bytes of UTF-8).
            let keys = (0..<32).map { i in
                let letter = Character(UnicodeScalar(UInt8(97 + i % 26)))
                return i % 2 == 0 ? String(repeating: letter, count: 768) : String(repeating: letter, count: 766) + "é"
            }
            #expect(keys.allSatisfy { $0.utf8.count == 768 })
            let deep = Path(validatedKeys: keys)
            _ = try await engine.set(deep, .number(1))
            #expect(try await engine.get(deep) == .number(1))
            #expect(try await engine.get(deep.parent!) == .object([deep.lastKey!: .number(1)]))
            let base = Path(validatedKeys: Array(keys.prefix(2)))
            _ = try await engine.set(base, .object([keys[2]: .object([keys[3]: .bool(true)])]))
            _ = try await engine.update(base, [.init(path: Path(validatedKeys: [keys[4], keys[5]]), value: .string("x"))])
            #expect(try await engine.get(base.appending(keys[4]).appending(keys[5])) == .string("x"))
            let entry = try #require(try engine.readLogEntries(after: nil, limit: 10).last)
            #expect(entry.changes.first?.path == Path(validatedKeys: [keys[4], keys[5]]))
            try await expectRefused(engine, .invalidKey, mentioning: ["769 bytes", "keyBytesMax is 768"], "a 769-byte key") {
                _ = try await engine.set(base.appending(String(repeating: "z", count: 769)), .number(1))
            }
            try await expectRefused(engine, .invalidPath, mentioning: ["33 keys deep", "pathDepthMax is 32"], "33 deep below long keys") {
                _ = try await engine.set(deep, .object([keys[0]: .number(1)]))
            }
            _ = try engine.verify()
        }
    }

    @Test func updatePathCountLimitIsEnforced() async throws {
        try await withEngine { engine in
            let many = (0...Limits.updatePathsCountMax).map { LogEntry.Change(path: Path(validatedKeys: ["k\($0)"]), value: .number(Double($0))) }
            try await expectRefused(engine, .limitExceeded, mentioning: ["\(Limits.updatePathsCountMax + 1)", "updatePathsCountMax"], "too many paths") {
                _ = try await engine.update(p("/u"), many)
            }
            // Exactly the limit is accepted, logged as one entry, and decodes again.
            _ = try await engine.update(p("/u"), Array(many.dropLast()))
            #expect(try await engine.getShallow(p("/u")).leafCount == Limits.updatePathsCountMax)
            let entry = try #require(try engine.readLogEntries(after: nil, limit: 10).first)
            #expect(entry.changes.count == Limits.updatePathsCountMax)
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity, .signalingNaN])
    func nonFiniteNumbersAreRefused(_ number: Double) async throws {
        try await withEngine { engine in
            try await expectRefused(engine, .invalidValue, mentioning: ["/n", "finite"], "set \(number)") {
                _ = try await engine.set(p("/n"), .number(number))
            }
            try await expectRefused(engine, .invalidValue, mentioning: ["/n/deep/x", "finite"], "nested \(number)") {
                _ = try await engine.set(p("/n"), .object(["ok": .number(1), "deep": .object(["x": .number(number)])]))
            }
            try await expectRefused(engine, .invalidValue, mentioning: ["finite"], "update \(number)") {
                _ = try await engine.update(p("/n"), [.init(path: p("a"), value: .number(1)), .init(path: p("b"), value: .number(number))])
            }
            try await expectRefused(engine, .invalidValue, mentioning: ["finite"], "push \(number)") {
                _ = try await engine.push(p("/n"), .number(number))
            }
        }
    }

    @Test func stringSizeLimitIsEnforced() async throws {
        try await withEngine { engine in
            let big = String(repeating: "x", count: Limits.stringBytesMax + 1)
            try await expectRefused(engine, .limitExceeded, mentioning: ["/s", "\(Limits.stringBytesMax + 1)", "stringBytesMax"], "10 MiB + 1") {
                _ = try await engine.set(p("/s"), .string(big))
            }
            // Multi-byte characters count in UTF-8 bytes: 5 MiB of "é" + 1 byte is over.
            let wide = String(repeating: "é", count: Limits.stringBytesMax / 2) + "x"
            try await expectRefused(engine, .limitExceeded, mentioning: ["stringBytesMax"], "é × 5 Mi + 1") {
                _ = try await engine.set(p("/s"), .string(wide))
            }
            // Exactly the limit is accepted and reads back whole.
            let exact = String(repeating: "y", count: Limits.stringBytesMax)
            _ = try await engine.set(p("/s"), .string(exact))
            let read = try await engine.get(p("/s"))
            #expect(read == .string(exact))
            // The log entry (value and, on replacement, before-image) decodes again.
            _ = try await engine.set(p("/s"), .string("small"))
            let entries = try engine.readLogEntries(after: nil, limit: 10)
            #expect(entries.count == 2)
            #expect(entries.last?.before == [.init(path: p("/s"), value: .string(exact))])
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test(arguments: [
        #"{".sv":"now"}"#, #"{".sv":"timestamp","x":1}"#, #"{".sv":{"increment":"1"}}"#, #"{".sv":{"increment":1,"x":2}}"#,
        #"{".sv":{"decrement":1}}"#, #"{".sv":{}}"#, #"{".sv":5}"#, #"{".sv":null}"#, #"{".sv":true}"#,
    ])
    func malformedServerValuesAreRefused(_ body: String) async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/s"), .number(1))
            try await expectRefused(engine, .invalidValue, mentioning: ["server value", "/s/v"], body) {
                _ = try await engine.set(p("/s/v"), json(body))
            }
            try await expectRefused(engine, .invalidValue, mentioning: ["server value"], "nested \(body)") {
                _ = try await engine.set(p("/s"), .object(["w": .object(["v": json(body)])]))
            }
            try await expectRefused(engine, .invalidValue, mentioning: ["server value"], "update \(body)") {
                _ = try await engine.update(p("/s"), [.init(path: p("a"), value: .number(1)), .init(path: p("v"), value: json(body))])
            }
        }
    }

    @Test func incrementByANonFiniteNumberIsRefused() async throws {
        try await withEngine { engine in
            try await expectRefused(engine, .invalidValue, mentioning: [], "increment by nan") {
                _ = try await engine.set(p("/s"), .object([".sv": .object(["increment": .number(.nan)])]))
            }
        }
    }

    // MARK: server values

    @Test func timestampResolvesToTheInjectedClock() async throws {
        let clock = ManualClock(1_234_567_890_123)
        try await withEngine(clock: clock) { engine in
            let committed = try #require(try await engine.set(p("/t"), json(#"{".sv":"timestamp"}"#)).committed)
            #expect(committed.value == .number(1_234_567_890_123))
            #expect(try await engine.get(p("/t")) == .number(1_234_567_890_123))
            clock.advance(by: 77)
            _ = try await engine.set(p("/obj"), json(#"{"at":{".sv":"timestamp"},"deep":{"er":{".sv":"timestamp"}},"n":1}"#))
            #expect(try await engine.get(p("/obj")) == json(#"{"at":1234567890200,"deep":{"er":1234567890200},"n":1}"#))
            clock.advance(by: 1)
            _ = try await engine.update(p("/obj"), [.init(path: p("at"), value: json(#"{".sv":"timestamp"}"#))])
            #expect(try await engine.get(p("/obj/at")) == .number(1_234_567_890_201))
            clock.advance(by: 1)
            let pushed = try await engine.push(p("/events"), json(#"{"when":{".sv":"timestamp"}}"#))
            #expect(pushed.value == json(#"{"when":1234567890202}"#))
            #expect(try await engine.get(p("/events/\(pushed.pushedKey!)/when")) == .number(1_234_567_890_202))
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test func incrementOnAbsentNonNumberAndNumber() async throws {
        try await withEngine { engine in
            let inc: (Double) -> Value = { n in .object([".sv": .object(["increment": .number(n)])]) }
            // Absent: becomes n.
            #expect(try await engine.set(p("/c/absent"), inc(3)).committed?.value == .number(3))
            #expect(try await engine.get(p("/c/absent")) == .number(3))
            // A number: adds.
            _ = try await engine.set(p("/c/absent"), inc(-1.5))
            #expect(try await engine.get(p("/c/absent")) == .number(1.5))
            // Non-numbers: become n.
            _ = try await engine.set(p("/c/s"), .string("7"))
            _ = try await engine.set(p("/c/s"), inc(2))
            #expect(try await engine.get(p("/c/s")) == .number(2))
            _ = try await engine.set(p("/c/b"), .bool(true))
            _ = try await engine.set(p("/c/b"), inc(2))
            #expect(try await engine.get(p("/c/b")) == .number(2))
            _ = try await engine.set(p("/c/o"), json(#"{"x":1}"#))
            _ = try await engine.set(p("/c/o"), inc(4))
            #expect(try await engine.get(p("/c/o")) == .number(4))
            // Below a primitive: the target is absent.
            _ = try await engine.set(p("/c/prim"), .number(10))
            _ = try await engine.set(p("/c/prim/x"), inc(1))
            #expect(try await engine.get(p("/c/prim")) == json(#"{"x":1}"#))
            // Nested in an object value and in an update: against the value at that path.
            _ = try await engine.set(p("/counter"), json(#"{"n":5,"m":"str"}"#))
            _ = try await engine.set(p("/counter"), .object(["n": inc(10), "m": inc(1), "k": inc(2)]))
            #expect(try await engine.get(p("/counter")) == json(#"{"n":15,"m":1,"k":2}"#))
            _ = try await engine.update(p("/counter"), [.init(path: p("n"), value: inc(1)), .init(path: p("z/y"), value: inc(1))])
            #expect(try await engine.get(p("/counter")) == json(#"{"n":16,"m":1,"k":2,"z":{"y":1}}"#))
            // Fractions and large values are plain doubles.
            _ = try await engine.set(p("/f"), .number(0.1))
            _ = try await engine.set(p("/f"), inc(0.2))
            #expect(try await engine.get(p("/f")) == .number(0.1 + 0.2))
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test func incrementsInOneGroupSeeEachOther() async throws {
        try await withEngine(durability: .sync) { engine in
            let inc: Value = .object([".sv": .object(["increment": .number(1)])])
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<200 {
                    group.addTask { _ = try await engine.set(p("/hits"), inc) }
                }
                try await group.waitForAll()
            }
            #expect(try await engine.get(p("/hits")) == .number(200))
            #expect(try engine.verify().isHealthy)
        }
    }

    // MARK: conditional writes

    @Test func ifMatchWithTheCurrentETagCommits() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/doc"), json(#"{"v":1,"list":[1,2]}"#))
            let current = try await engine.get(p("/doc"))
            let etag = ETag.of(current)
            #expect(etag != ETag.null)
            let outcome = try await engine.set(p("/doc"), json(#"{"v":2}"#), ifMatch: etag)
            #expect(outcome.committed != nil)
            #expect(try await engine.get(p("/doc")) == json(#"{"v":2}"#))
            // Remove with the right ETag.
            let removed = try await engine.remove(p("/doc"), ifMatch: ETag.of(json(#"{"v":2}"#)))
            #expect(removed.committed != nil)
            #expect(try await engine.get(p("/doc")) == .null)
        }
    }

    @Test func ifMatchWithAWrongETagFailsAndLogsNothing() async throws {
        try await withEngine { engine in
            _ = try await engine.set(p("/doc"), json(#"{"v":1}"#))
            let lastBefore = try engine.lastLogID()
            let stale = ETag.of(json(#"{"v":0}"#))
            let outcome = try await engine.set(p("/doc"), json(#"{"v":2}"#), ifMatch: stale)
            #expect(outcome == .preconditionFailed(current: json(#"{"v":1}"#), etag: ETag.of(json(#"{"v":1}"#))))
            #expect(outcome.committed == nil)
            #expect(try engine.lastLogID() == lastBefore)
            #expect(try await engine.get(p("/doc")) == json(#"{"v":1}"#))
            // ETag.null against existing data fails too.
            let againstNull = try await engine.set(p("/doc"), .number(1), ifMatch: ETag.null)
            #expect(againstNull == .preconditionFailed(current: json(#"{"v":1}"#), etag: ETag.of(json(#"{"v":1}"#))))
            let removeOutcome = try await engine.remove(p("/doc"), ifMatch: "garbage")
            #expect(removeOutcome.committed == nil)
            #expect(try engine.lastLogID() == lastBefore)
            #expect(try await engine.get(p("/doc")) == json(#"{"v":1}"#))
            // A child's ETag is not the parent's.
            let wrongLevel = try await engine.set(p("/doc"), .number(3), ifMatch: ETag.of(.number(1)))
            #expect(wrongLevel.committed == nil)
        }
    }

    @Test func nullETagMatchesAnAbsentLocation() async throws {
        try await withEngine { engine in
            #expect(ETag.null == "null_etag")
            let created = try await engine.set(p("/new"), .string("first"), ifMatch: ETag.null)
            #expect(created.committed != nil)
            #expect(try await engine.get(p("/new")) == .string("first"))
            let second = try await engine.set(p("/new"), .string("second"), ifMatch: ETag.null)
            #expect(second == .preconditionFailed(current: .string("first"), etag: ETag.of(.string("first"))))
            #expect(try await engine.get(p("/new")) == .string("first"))
            // Below a primitive the location is absent.
            let below = try await engine.set(p("/new/child"), .number(1), ifMatch: ETag.null)
            #expect(below.committed != nil)
            #expect(try await engine.get(p("/new")) == json(#"{"child":1}"#))
        }
    }

    @Test func conditionalWritesInOneGroupSeeEachOther() async throws {
        // Only one of many writers racing with the same ETag may win.
        try await withEngine(durability: .sync) { engine in
            _ = try await engine.set(p("/lock"), .string("free"))
            let etag = ETag.of(.string("free"))
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for i in 0..<50 {
                    group.addTask { try await engine.set(p("/lock"), .string("owner \(i)"), ifMatch: etag).committed != nil }
                }
                var wins = 0
                for try await won in group where won { wins += 1 }
                return wins
            }
            #expect(wins == 1)
            #expect(try engine.logCount() == 2)
        }
    }
}
