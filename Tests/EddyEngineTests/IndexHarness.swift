// Shared by the index suites: an engine plus the reference model, the index timing variants
// (declared before or after the data), query shorthands and `IndexHarness.checkAll`, which
// compares every location's order and a table of windows with the oracle and runs verify().

import EddyEngine
import EddyModel
import EddyTesting
import Testing

/// When a scenario declares its indexes: before writing any data, or after loading it (then
/// waiting for the online build).
enum IndexTiming: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case beforeData
    case afterData

    var testDescription: String { self.rawValue }
}

/// Firebase-style text of a query, for failure messages: `orderBy="score" startAt=2,"c" limitToFirst=1`.
func describe(_ query: Query) -> String {
    var parts: [String] = []
    switch query.order {
    case .key: parts.append(#"orderBy="$key""#)
    case .value: parts.append(#"orderBy="$value""#)
    case .priority: parts.append(#"orderBy="$priority""#)
    case .child(let path): parts.append("orderBy=\"\(path.keys.joined(separator: "/"))\"")
    }
    func bound(_ bound: Query.Bound) -> String {
        text(bound.value) + (bound.key.map { "," + text(.string($0)) } ?? "")
    }
    if let start = query.start { parts.append((start.inclusive ? "startAt=" : "startAfter=") + bound(start)) }
    if let end = query.end { parts.append((end.inclusive ? "endAt=" : "endBefore=") + bound(end)) }
    switch query.limit {
    case .first(let n): parts.append("limitToFirst=\(n)")
    case .last(let n): parts.append("limitToLast=\(n)")
    case nil: break
    }
    return parts.joined(separator: " ")
}

/// An inclusive bound (startAt / endAt / equalTo), optionally with a key tie-break.
func at(_ value: Value, _ key: String? = nil) -> Query.Bound { Query.Bound(value: value, key: key, inclusive: true) }

/// An exclusive bound (startAfter / endBefore), optionally with a key tie-break.
func excl(_ value: Value, _ key: String? = nil) -> Query.Bound { Query.Bound(value: value, key: key, inclusive: false) }

/// The keys of a query result.
func resultKeys(_ result: Value) -> Set<String> {
    guard case .object(let children) = result else { return [] }
    return Set(children.keys)
}

/// A rules document declaring `.indexOn` entries: `["posts": ["score"], "user-posts/$uid": ["stars"]]`.
/// (Arrays are objects keyed "0", "1", ... in `Value`, as JSONParser reads them.)
func indexRules(_ declarations: [String: [String]]) -> Value {
    var rules: Value = .object([".read": .bool(true), ".write": .bool(true)])
    for (location, ons) in declarations {
        let list = Dictionary(uniqueKeysWithValues: ons.enumerated().map { (String($0.offset), Value.string($0.element)) })
        let keys = location.split(separator: "/").map(String.init) + [".indexOn"]
        rules = rules.setting(.object(list), at: Path(validatedKeys: keys))
    }
    return .object(["rules": rules])
}

/// An engine and the reference model it must agree with: every write goes to both.
final class IndexHarness {
    let directory: TemporaryDirectory
    private(set) var options: EngineOptions
    let clock = ManualClock(1_700_000_000_000)
    private(set) var engine: Engine
    private(set) var model = ReferenceModel()
    /// Location pattern (`"user-posts/$uid"`) to `.indexOn` names.
    private(set) var declarations: [String: [String]] = [:]

    init(options: EngineOptions = EngineOptions(durability: .none), label: String = #function) throws {
        self.directory = TemporaryDirectory(label)
        self.options = options
        self.engine = try Engine.open(directory: self.directory.path, options: options, clock: self.clock, logger: quietLogger)
    }

    func close() {
        self.engine.close()
        self.directory.remove()
    }

    /// Closes the engine and opens it again on the same directory (with `options`, when given,
    /// from then on).
    func reopen(options: EngineOptions? = nil) throws {
        if let options { self.options = options }
        self.engine.close()
        self.engine = try Engine.open(directory: self.directory.path, options: self.options, clock: self.clock, logger: quietLogger)
    }

    /// Opens a harness, declares `declarations` before or after loading `data` at the root,
    /// runs `body`, then expects a healthy `verify()`.
    static func run(
        _ timing: IndexTiming, _ declarations: [String: [String]], data: Value, label: String = #function,
        _ body: (IndexHarness) async throws -> Void
    ) async throws {
        let h = try IndexHarness(label: label)
        defer { h.close() }
        if timing == .beforeData { try await h.setRules(declarations) }
        try await h.set("/", data)
        if timing == .afterData {
            try await h.setRules(declarations)
            try await h.engine.waitForIndexes()
        }
        try await h.checkAll("\(timing) loaded")
        try await body(h)
        try await h.checkAll("\(timing) end")
    }

    func setRules(_ declarations: [String: [String]]) async throws {
        _ = try await self.engine.setRules(indexRules(declarations))
        self.declarations = declarations
    }

    private func resolved(_ value: Value, at path: Path) -> Value {
        ModelBasedTests.resolve(value.normalized(), old: self.model.get(path), now: self.clock.nowMilliseconds()).normalized()
    }

    func set(_ path: String, _ value: Value) async throws {
        let path = p(path)
        let resolved = self.resolved(value, at: path)
        _ = try await self.engine.set(path, value)
        self.model.set(path, resolved)
    }

    func update(_ path: String, _ changes: [(String, Value)]) async throws {
        let location = p(path)
        let resolved = changes.map { (p($0.0), self.resolved($0.1, at: location.appending(p($0.0)))) }
        _ = try await self.engine.update(location, changes.map { LogEntry.Change(path: p($0.0), value: $0.1) })
        self.model.update(location, resolved)
    }

    @discardableResult
    func push(_ path: String, _ value: Value) async throws -> String {
        let committed = try await self.engine.push(p(path), value)
        let key = try #require(committed.pushedKey)
        self.model.set(p(path).appending(key), self.resolved(value, at: p(path).appending(key)))
        return key
    }

    func remove(_ path: String) async throws {
        _ = try await self.engine.remove(p(path))
        self.model.remove(p(path))
    }

    enum Op: CustomStringConvertible {
        case set(String, Value)
        case update(String, [(String, Value)])
        case push(String, Value)
        case remove(String)

        var description: String {
            switch self {
            case .set(let path, let value): return "set \(path)=\(text(value))"
            case .update(let path, let changes): return "update \(path) \(changes.map { "\($0.0)=\(text($0.1))" })"
            case .push(let path, let value): return "push \(path) \(text(value))"
            case .remove(let path): return "remove \(path)"
            }
        }
    }

    /// Runs `ops` on the engine at once (they share commit groups), then applies them to the
    /// model in log order.
    func concurrently(_ ops: [Op]) async throws {
        let engine = self.engine
        let committed = try await withThrowingTaskGroup(of: (Int, CommittedWrite).self) { group in
            for (i, op) in ops.enumerated() {
                let sendable: (kind: Int, path: Path, value: Value, changes: [LogEntry.Change]) = {
                    switch op {
                    case .set(let path, let value): return (0, p(path), value, [])
                    case .update(let path, let changes): return (1, p(path), .null, changes.map { LogEntry.Change(path: p($0.0), value: $0.1) })
                    case .push(let path, let value): return (2, p(path), value, [])
                    case .remove(let path): return (3, p(path), .null, [])
                    }
                }()
                group.addTask {
                    switch sendable.kind {
                    case 0: return (i, try await engine.set(sendable.path, sendable.value).committed!)
                    case 1: return (i, try await engine.update(sendable.path, sendable.changes))
                    case 2: return (i, try await engine.push(sendable.path, sendable.value))
                    default: return (i, try await engine.remove(sendable.path).committed!)
                    }
                }
            }
            var results: [(Int, CommittedWrite)] = []
            for try await result in group { results.append(result) }
            return results
        }
        for (i, write) in committed.sorted(by: { $0.1.logID < $1.1.logID }) {
            switch ops[i] {
            case .set(let path, let value): self.model.set(p(path), self.resolved(value, at: p(path)))
            case .update(let path, let changes):
                self.model.update(p(path), changes.map { (p($0.0), self.resolved($0.1, at: p(path).appending(p($0.0)))) })
            case .push(let path, let value):
                let at = p(path).appending(write.pushedKey!)
                self.model.set(at, self.resolved(value, at: at))
            case .remove(let path): self.model.remove(p(path))
            }
        }
    }

    /// The orders declared at a location pattern, plus key order.
    func orders(_ pattern: String) -> [Query.Order] {
        [.key] + (self.declarations[pattern] ?? []).map { $0 == ".value" ? .value : .child(p($0)) }
    }

    /// Every concrete location a declaration covers: wildcards expanded to the keys that exist
    /// there, plus one that does not.
    func locations(_ pattern: String) -> [Path] {
        var paths: [Path] = [.root]
        for segment in pattern.split(separator: "/").map(String.init) {
            var next: [Path] = []
            for path in paths {
                if segment.hasPrefix("$") {
                    if case .object(let children) = self.model.get(path) { next += children.keys.sorted().map { path.appending($0) } }
                    next.append(path.appending("no-such-key"))
                } else {
                    next.append(path.appending(segment))
                }
            }
            paths = next
        }
        return paths
    }

    /// Compares every declared order at every covered location with the oracle, then verifies.
    /// Not `thorough`: the whole order and a few limits only, no bounds.
    func checkAll(_ context: String, thorough: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        for pattern in self.declarations.keys.sorted() {
            for location in self.locations(pattern) {
                for order in self.orders(pattern) {
                    try await self.expectAgreement(at: location, order, context, bounds: thorough, sourceLocation: sourceLocation)
                }
            }
        }
        let report = try self.engine.verify()
        #expect(report.isHealthy, "\(context): \(report)", sourceLocation: sourceLocation)
    }

    /// One query, engine against oracle.
    func expectSame(_ path: Path, _ query: Query, _ context: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let got = try await self.engine.query(path, query)
        let expected = self.model.query(path, query)
        #expect(
            got == expected, "\(context): \(path) \(describe(query))\n  expected \(text(expected))\n  got      \(text(got))",
            sourceLocation: sourceLocation)
        // The JSON answer (REST's, joined from covered entries when indexed) holds the value
        // answer: members, arrays, escapes, a limitToLast window read backward. (Its members
        // come in query order, so the text differs from JSONWriter's, which sorts them.)
        let json = try self.engine.readQueryJSON(path, query)
        let parsed = try JSONParser.parse(json).normalized()
        #expect(
            parsed == got, "\(context): \(path) \(describe(query)) as JSON\n  expected \(text(got))\n  got      \(String(decoding: json, as: UTF8.self))",
            sourceLocation: sourceLocation)
    }

    /// The children of `path` in `query`'s order, read as limitToFirst(1), (2), ... windows;
    /// each window must add exactly one child to the previous one.
    func orderedKeys(_ path: Path, _ query: Query, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String] {
        var order: [String] = []
        var previous: Set<String> = []
        for n in 1...10_000 {
            var window = query
            window.limit = .first(n)
            let keys = resultKeys(try await self.engine.query(path, window))
            let added = keys.subtracting(previous)
            guard keys.isSuperset(of: previous), added.count <= 1 else {
                Issue.record(
                    "\(path) \(describe(window)) \(keys.sorted()) does not extend \(previous.sorted()) by one",
                    sourceLocation: sourceLocation)
                return order
            }
            guard let key = added.first else { return order }
            order.append(key)
            previous = keys
        }
        return order
    }

    /// The whole order (windows), then every bound kind at every child's (value, key), with and
    /// without the key, alone, paired as equalTo, and with limits.
    func expectAgreement(
        at path: Path, _ order: Query.Order, _ context: String, bounds withBounds: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        var children: [String: Value] = [:]
        if case .object(let c) = self.model.get(path) { children = c }
        let expectedOrder = ReferenceModel.select(children, Query(order: order))
        let gotOrder = try await self.orderedKeys(path, Query(order: order), sourceLocation: sourceLocation)
        #expect(gotOrder == expectedOrder, "\(context): order of \(path) \(describe(Query(order: order)))", sourceLocation: sourceLocation)

        for n in [1, 2, 3] {
            try await self.expectSame(path, Query(order: order, limit: .last(n)), context, sourceLocation: sourceLocation)
        }
        guard withBounds else { return }
        var bounds: [(Value, String?)] = []
        if order == .key {
            let keys = children.keys.sorted()
            let step = max(1, keys.count / 24)
            bounds = (stride(from: 0, to: keys.count, by: step).map { keys[$0] } + ["", "0", "a", "\u{FFFF}"]).map { (.string($0), nil) }
        } else {
            // Every child's (value, key) on small lists; an evenly spread sample of 24 on big ones.
            let keys = children.keys.sorted()
            let step = max(1, keys.count / 24)
            for key in stride(from: 0, to: keys.count, by: step).map({ keys[$0] }) {
                let sort = ReferenceModel.sortValue(of: children[key]!, order)
                if case .object = sort { continue }  // objects cannot be bounds
                bounds += [(sort, nil), (sort, key)]
                // Tie-breaks no child has: Firebase's sentinels and a string just after the key.
                if bounds.count % 3 == 0 { bounds += [(sort, "[MIN_NAME]"), (sort, "[MAX_NAME]"), (sort, key + "\u{0}")] }
            }
            bounds += [(.null, nil), (.bool(false), nil), (.number(0), nil), (.string(""), nil), (.string("\u{FFFF}"), "~")]
        }
        for (value, key) in bounds {
            for inclusive in [true, false] {
                let bound = Query.Bound(value: value, key: key, inclusive: inclusive)
                try await self.expectSame(path, Query(order: order, start: bound), context, sourceLocation: sourceLocation)
                try await self.expectSame(path, Query(order: order, end: bound), context, sourceLocation: sourceLocation)
                try await self.expectSame(path, Query(order: order, start: bound, limit: .last(2)), context, sourceLocation: sourceLocation)
                try await self.expectSame(path, Query(order: order, end: bound, limit: .first(2)), context, sourceLocation: sourceLocation)
            }
            let equal = Query.Bound(value: value, key: key, inclusive: true)
            try await self.expectSame(path, Query(order: order, start: equal, end: equal), context, sourceLocation: sourceLocation)
        }
    }

    /// The query must fail as Firebase's REST API does for an undeclared index.
    func expectIndexNotDefined(_ path: String, _ on: String, sourceLocation: SourceLocation = #_sourceLocation) async {
        let order: Query.Order = on == ".value" ? .value : .child(p(on))
        await expectEddyError(
            .invalidArgument, mentioning: ["Index not defined", "\".indexOn\": \"\(on)\"", "for path \"\(p(path))\""],
            sourceLocation: sourceLocation
        ) { _ = try await self.engine.query(p(path), Query(order: order)) }
    }
}

