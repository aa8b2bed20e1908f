// Model-based test: a seeded random sequence of set / update / push / remove (with server
// values, conditional writes, refused writes and restarts) runs against the engine and against
// `ReferenceModel`; after every operation reads at the root and at random paths must agree, and
// at the end `verify()` must be healthy. Keys include integer-like, non-ASCII and
// supplementary-plane characters.
//
// Rerun a failure with `EDDY_SEED=<seed>`; `EDDY_EVENTS_MAX` sets the number of operations.

import EddyEngine
import EddyModel
import EddyTesting
import Testing

@Suite struct ModelBasedTests {
    /// Keys the random paths and values draw from: few, so paths collide and share prefixes.
    static func keyPool(_ g: inout SeededGenerator) -> [String] {
        var keys = [
            "a", "b", "Z", "0", "1", "2", "3", "10", "01", "-1", "-0", "2147483647", "é", "中", "😀", "\u{E000}", "\u{10FFFF}x",
            "a😀b", "-", "+1",
        ]
        while keys.count < 26 {
            let key = RandomValues.key(&g)
            if key.utf8.count <= 24, !keys.contains(key) { keys.append(key) }
        }
        return keys
    }

    struct Run {
        var g: SeededGenerator
        let keys: [String]

        mutating func key() -> String {
            g.chance(1, in: 20) ? RandomValues.key(&g) : g.element(of: self.keys)
        }

        mutating func path(depth: ClosedRange<Int>) -> Path {
            let n = g.int(in: depth)
            var keys: [String] = []
            for _ in 0..<n {
                var k = self.key()
                while k.utf8.count > 60 { k = self.key() }
                keys.append(k)
            }
            return Path(validatedKeys: keys)
        }

        /// A location: rarely the root.
        mutating func location() -> Path {
            g.chance(1, in: 40) ? .root : self.path(depth: 1...4)
        }

        /// A value as a client may send it: nulls, empty objects, arrays (keys 0, 1, 2),
        /// nested objects and, when `serverValues`, `.sv` placeholders anywhere.
        mutating func value(depth: Int, serverValues: Bool) -> Value {
            let r = g.int(in: 0..<20)
            if r == 0 { return .null }
            if r == 1 { return .object([:]) }
            if serverValues, r == 2 { return .object([".sv": .string("timestamp")]) }
            if serverValues, r == 3 {
                return .object([".sv": .object(["increment": .number(Double(g.int(in: -3...5)))])])
            }
            if depth == 0 || r < 12 { return RandomValues.primitive(&g) }
            var children: [String: Value] = [:]
            if g.chance(1, in: 5) {
                for i in 0..<g.int(in: 1...4) { children[String(i)] = self.value(depth: depth - 1, serverValues: serverValues) }
            } else {
                for _ in 0..<g.int(in: 1...3) { children[self.key()] = self.value(depth: depth - 1, serverValues: serverValues) }
            }
            return .object(children)
        }
    }

    /// What the engine should have stored: server values replaced against the value they
    /// replace (the spec: timestamp = commit time; increment adds to a number, else is n).
    static func resolve(_ value: Value, old: Value, now: UInt64) -> Value {
        if case .object(let children) = value, children.count == 1, let sv = children[".sv"] {
            switch sv {
            case .string("timestamp"): return .number(Double(now))
            case .object(let op):
                // Firebase's rule: two whole numbers add exactly unless the sum overflows int64;
                // otherwise doubles.
                if let delta = op["increment"], let n = delta.doubleValue {
                    guard let current = old.doubleValue else { return delta }
                    if let a = old.exactInt64, let b = delta.exactInt64 {
                        let (sum, overflow) = a.addingReportingOverflow(b)
                        if !overflow { return .integer(sum) }
                    }
                    return .number(current + n)
                }
            default: break
            }
        }
        guard case .object(let children) = value else { return value }
        var out: [String: Value] = [:]
        for (key, child) in children { out[key] = resolve(child, old: old[key], now: now) }
        return .object(out)
    }

    static func shallow(_ value: Value) -> Value {
        guard case .object(let children) = value else { return value }
        return .object(children.mapValues { _ in .bool(true) })
    }

    @Test func randomOperationsMatchTheReferenceModel() async throws {
        let seed = SeededGenerator.seedFromEnvironment()
        let operations = SeededGenerator.eventsMaxFromEnvironment(default: 400)
        print("ModelBasedTests: EDDY_SEED=\(seed) EDDY_EVENTS_MAX=\(operations)")
        var g = SeededGenerator(seed: seed)
        let keys = Self.keyPool(&g)
        var run = Run(g: g, keys: keys)
        #expect(keys.contains { Key.integerValue($0) != nil }, "seed \(seed)")
        #expect(keys.contains { $0.unicodeScalars.contains { $0.value > 0xFFFF } }, "seed \(seed)")

        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualClock(1_700_000_000_000)
        let options = EngineOptions(durability: .none)
        var engine = try Engine.open(directory: directory.path, options: options, clock: clock, logger: quietLogger)
        defer { engine.close() }
        var model = ReferenceModel()
        var logged = 0
        var counts: [String: Int] = [:]

        for step in 0..<operations {
            clock.advance(by: UInt64(run.g.int(in: 0...3)))
            let now = clock.nowMilliseconds()
            let lastBefore = try engine.lastLogID()
            let loggedBefore = logged
            let roll = run.g.int(in: 0..<100)
            var context = "seed \(seed) step \(step)"
            switch roll {
            case 0..<38:  // set, sometimes with server values
                let path = run.location()
                let raw = run.value(depth: 3, serverValues: run.g.chance(1, in: 4))
                context += " set \(path) = \(text(raw))"
                counts["set", default: 0] += 1
                let expected = Self.resolve(raw.normalized(), old: model.get(path), now: now).normalized()
                if let error = Self.validationError(raw, at: path) {
                    await expectEddyError(error.code, context) { _ = try await engine.set(path, raw) }
                } else {
                    let outcome = try await engine.set(path, raw)
                    #expect(outcome.committed?.value == expected, "\(context)")
                    model.set(path, expected)
                    logged += 1
                }
            case 38..<56:  // multi-path update, sometimes refused for a path and its ancestor
                let location = run.g.chance(1, in: 10) ? .root : run.path(depth: 0...2)
                var changes: [LogEntry.Change] = []
                for _ in 0..<run.g.int(in: 1...4) {
                    changes.append(.init(path: run.path(depth: 1...3), value: run.value(depth: 2, serverValues: run.g.chance(1, in: 4))))
                }
                if run.g.chance(1, in: 8), let first = changes.first {
                    changes.append(.init(path: first.path.appending(run.key()), value: .number(1)))  // conflict on purpose
                }
                context += " update \(location) \(changes.map { "\($0.path)=\(text($0.value))" })"
                counts["update", default: 0] += 1
                let conflict = changes.indices.contains { i in
                    changes.indices.contains { j in i != j && changes[i].path.isAncestorOrSelf(of: changes[j].path) }
                }
                let invalid = changes.lazy.compactMap { Self.validationError($0.value, at: location.appending($0.path)) }.first
                if conflict || invalid != nil {
                    await expectEddyError(invalid?.code ?? .invalidPath, context) { _ = try await engine.update(location, changes) }
                } else {
                    var resolved: [(Path, Value)] = []
                    for change in changes {
                        let absolute = location.appending(change.path)
                        resolved.append((change.path, Self.resolve(change.value.normalized(), old: model.get(absolute), now: now).normalized()))
                    }
                    _ = try await engine.update(location, changes)
                    model.update(location, resolved)
                    logged += 1
                }
            case 56..<68:  // push
                let path = run.path(depth: 0...3)
                let raw = run.value(depth: 2, serverValues: run.g.chance(1, in: 4))
                context += " push \(path) \(text(raw))"
                counts["push", default: 0] += 1
                let expected = Self.resolve(raw.normalized(), old: .null, now: now).normalized()
                let committed = try await engine.push(path, raw)
                let key = try #require(committed.pushedKey, "\(context)")
                #expect(key == committed.logID.rawValue, "\(context)")
                #expect(model.get(path.appending(key)) == .null, "\(context): a push key is new")
                #expect(committed.value == expected, "\(context)")
                model.set(path.appending(key), expected)
                logged += 1
            case 68..<82:  // remove
                let path = run.g.chance(1, in: 3) ? Self.existingPath(model.root, &run.g) : run.location()
                context += " remove \(path)"
                counts["remove", default: 0] += 1
                _ = try await engine.remove(path)
                model.remove(path)
                logged += 1
            case 82..<95:  // conditional set with the right or a wrong ETag
                let path = run.g.chance(1, in: 2) ? Self.existingPath(model.root, &run.g) : run.location()
                var raw = run.value(depth: 2, serverValues: false)
                if Self.validationError(raw, at: path) != nil { raw = RandomValues.primitive(&run.g) }
                let current = model.get(path)
                let right = run.g.chance(2, in: 3)
                let etag = right ? ETag.of(current) : ETag.of(.string("surely not \(step)"))
                context += " set \(path) = \(text(raw)) if-match \(right ? "right" : "wrong") \(etag)"
                counts["conditional", default: 0] += 1
                let outcome = try await engine.set(path, raw, ifMatch: etag)
                if right {
                    #expect(outcome.committed?.value == raw.normalized(), "\(context)")
                    model.set(path, raw.normalized())
                    logged += 1
                } else {
                    #expect(outcome == .preconditionFailed(current: current, etag: ETag.of(current)), "\(context)")
                }
            case 95..<99:  // invalid writes: refused whole
                let path = run.location()
                let good = run.value(depth: 1, serverValues: false)
                let bad: Value = run.g.bool()
                    ? .object(["ok": good, "bad" + run.g.element(of: [".", "$", "#", "[", "]", "/", "\u{7F}"]): .number(1)])
                    : .object(["ok": good, "n": .number(run.g.bool() ? .nan : -.infinity)])
                context += " invalid set \(path)"
                counts["invalid", default: 0] += 1
                await expectEddyError(Self.validationError(bad, at: path)?.code ?? .invalidValue, context) {
                    _ = try await engine.set(path, bad)
                }
            default:  // restart
                context += " restart"
                counts["restart", default: 0] += 1
                engine.close()
                engine = try Engine.open(directory: directory.path, options: options, clock: clock, logger: quietLogger)
            }

            // Reads: the root, the touched neighbourhood and random paths, whole and shallow.
            #expect(try await engine.get(.root) == model.root, "\(context): root")
            for _ in 0..<4 {
                let path = run.g.chance(1, in: 2) ? Self.existingPath(model.root, &run.g) : run.path(depth: 1...4)
                #expect(try await engine.get(path) == model.get(path), "\(context): get \(path)")
                #expect(try await engine.getShallow(path) == Self.shallow(model.get(path)), "\(context): shallow \(path)")
            }
            let lastAfter = try engine.lastLogID()
            if logged == loggedBefore {
                #expect(lastAfter == lastBefore, "\(context): nothing logged")
            } else {
                #expect(logged == loggedBefore + 1, "\(context)")
                #expect(lastAfter != nil && lastBefore.map { $0 < lastAfter! } ?? true, "\(context): log ids increase")
            }
            if step % 25 == 0 { #expect(try engine.logCount() == logged, "\(context): log count") }
        }
        print("ModelBasedTests: seed \(seed): \(counts.sorted { $0.key < $1.key })")
        let report = try engine.verify()
        #expect(report.isHealthy, "seed \(seed): \(report)")
        #expect(report.logEntryCount == logged, "seed \(seed)")
        #expect(report.leafCount == model.root.leafCount, "seed \(seed)")
        #expect(try await engine.get(.root) == model.root, "seed \(seed)")
    }

    enum Op: Sendable, CustomStringConvertible {
        case set(Path, Value)
        case update(Path, [LogEntry.Change])
        case push(Path, Value)
        case remove(Path)

        var description: String {
            switch self {
            case .set(let path, let value): return "set \(path) = \(text(value))"
            case .update(let path, let changes): return "update \(path) \(changes.map { "\($0.path)=\(text($0.value))" })"
            case .push(let path, let value): return "push \(path) \(text(value))"
            case .remove(let path): return "remove \(path)"
            }
        }

        func run(on engine: Engine) async throws -> CommittedWrite {
            switch self {
            case .set(let path, let value): return try await engine.set(path, value).committed!
            case .update(let path, let changes): return try await engine.update(path, changes)
            case .push(let path, let value): return try await engine.push(path, value)
            case .remove(let path): return try await engine.remove(path).committed!
            }
        }

        /// Applies the op to the model as the engine should have, given what it committed.
        func apply(to model: inout ReferenceModel, committed: CommittedWrite, now: UInt64) {
            switch self {
            case .set(let path, let value):
                model.set(path, ModelBasedTests.resolve(value.normalized(), old: model.get(path), now: now).normalized())
            case .update(let path, let changes):
                let resolved = changes.map { change in
                    let old = model.get(path.appending(change.path))
                    return (change.path, ModelBasedTests.resolve(change.value.normalized(), old: old, now: now).normalized())
                }
                model.update(path, resolved)
            case .push(let path, let value):
                model.set(path.appending(committed.pushedKey!), ModelBasedTests.resolve(value.normalized(), old: .null, now: now).normalized())
            case .remove(let path):
                model.remove(path)
            }
        }
    }

    /// Concurrent batches: each batch's writes race into the commit queue and share group
    /// commits, so later writes of a group must see earlier ones (increments on the same path,
    /// a set under a primitive another write of the group just created). The model applies
    /// each batch in log order.
    @Test func concurrentBatchesMatchTheReferenceModelInLogOrder() async throws {
        let seed = SeededGenerator.seedFromEnvironment()
        let batches = max(1, SeededGenerator.eventsMaxFromEnvironment(default: 400) / 8)
        print("ModelBasedTests (concurrent): EDDY_SEED=\(seed) batches=\(batches)")
        var g = SeededGenerator(seed: seed)
        // A small pool so the writes of one batch collide.
        var run = Run(g: g, keys: Array(Self.keyPool(&g).prefix(8)))
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualClock(1_700_000_000_000)
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), clock: clock, logger: quietLogger)
        defer { engine.close() }
        let groupSizes = Counter()
        engine.observeCommits { entries in groupSizes.raise(to: entries.count) }
        var model = ReferenceModel()
        var logged = 0
        for batch in 0..<batches {
            clock.advance(by: 1)
            let now = clock.nowMilliseconds()
            var ops: [Op] = []
            let size = run.g.int(in: 1...32)
            while ops.count < size {
                let op: Op
                switch run.g.int(in: 0..<10) {
                case 0..<4: op = .set(run.path(depth: 1...3), run.value(depth: 2, serverValues: run.g.chance(1, in: 3)))
                case 4..<6:
                    let changes = (0..<run.g.int(in: 1...3)).map { _ in
                        LogEntry.Change(path: run.path(depth: 1...2), value: run.value(depth: 1, serverValues: run.g.chance(1, in: 3)))
                    }
                    op = .update(run.path(depth: 0...1), changes)
                case 6..<8: op = .push(run.path(depth: 0...2), run.value(depth: 1, serverValues: run.g.chance(1, in: 3)))
                default: op = .remove(run.path(depth: 1...3))
                }
                if case .update(let path, let changes) = op {
                    let conflict = changes.indices.contains { i in
                        changes.indices.contains { j in i != j && changes[i].path.isAncestorOrSelf(of: changes[j].path) }
                    }
                    if conflict || changes.contains(where: { Self.validationError($0.value, at: path.appending($0.path)) != nil }) { continue }
                }
                if case .set(let path, let value) = op, Self.validationError(value, at: path) != nil { continue }
                ops.append(op)
            }
            let context = "seed \(seed) batch \(batch) \(ops)"
            let committed = try await withThrowingTaskGroup(of: (Int, CommittedWrite).self) { group in
                for (i, op) in ops.enumerated() { group.addTask { (i, try await op.run(on: engine)) } }
                var results: [(Int, CommittedWrite)] = []
                for try await result in group { results.append(result) }
                return results
            }
            #expect(committed.count == ops.count, "\(context)")
            for (i, write) in committed.sorted(by: { $0.1.logID < $1.1.logID }) {
                ops[i].apply(to: &model, committed: write, now: now)
            }
            logged += ops.count
            #expect(try await engine.get(.root) == model.root, "\(context): root")
            for _ in 0..<3 {
                let path = run.path(depth: 1...3)
                #expect(try await engine.get(path) == model.get(path), "\(context): get \(path)")
            }
        }
        let report = try engine.verify()
        #expect(report.isHealthy, "seed \(seed): \(report)")
        #expect(report.logEntryCount == logged, "seed \(seed)")
        #expect(groupSizes.value > 1, "seed \(seed): some groups held several writes")
    }

    /// The error `WriteValidator` gives for writing `value` at `path`, nil when valid.
    static func validationError(_ value: Value, at path: Path) -> EddyError? {
        do {
            _ = try WriteValidator.validate(value, at: path)
            return nil
        } catch {
            return error
        }
    }

    /// A path that exists in `root` (any node, leaf or object), the root when empty.
    static func existingPath(_ root: Value, _ g: inout SeededGenerator) -> Path {
        var keys: [String] = []
        var node = root
        while case .object(let children) = node, !children.isEmpty, keys.isEmpty || g.chance(3, in: 4) {
            let key = g.element(of: children.keys.sorted())
            keys.append(key)
            node = children[key]!
        }
        return Path(validatedKeys: keys)
    }
}
