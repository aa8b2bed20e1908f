// Reads checked against the security rules: each check runs on the reader thread that then
// reads, right before the read, and reads only the locations its rules name (`RuleTree`).
// Firebase's semantics: a location is readable when a `.read` at it or above it holds; a read of
// a location that is not wholly readable is denied, never filtered. A query's parameters are the
// rules' `query` variable. Writes are checked by the committer (`Committer+Access.swift`).

import EddyIndexes
import EddyModel
import EddyTree

extension Engine {
    /// The rules in force now.
    public var securityRules: SecurityRules { self.securityRulesHolder.rules }

    /// `get` for `access`: throws `permissionDenied` when the rules do not allow the read.
    public func get(_ path: Path, access: Access) async throws(EddyError) -> Value {
        try await self.onReader { () throws(EddyError) in
            try self.checkRead(path, query: nil, access)
            return try self.readValue(path)
        }
    }

    /// The value at `path` as compact JSON text for `access`, written straight from the tree
    /// (`TreeJSONWriter`): byte for byte `JSONWriter.bytes` of `get`'s value.
    public func getJSON(_ path: Path, access: Access) async throws(EddyError) -> [UInt8] {
        try await self.getJSON(path, access: access, bytesMax: .max)!  // no bound: always whole
    }

    /// `getJSON`, or nil as soon as the JSON would pass `bytesMax` bytes (nothing larger is built).
    public func getJSON(_ path: Path, access: Access, bytesMax: Int) async throws(EddyError) -> [UInt8]? {
        try await self.onReader { () throws(EddyError) in
            try self.checkRead(path, query: nil, access)
            return try self.readValueJSON(path, bytesMax: bytesMax)
        }
    }

    /// `getShallow` for `access`.
    public func getShallow(_ path: Path, access: Access) async throws(EddyError) -> Value {
        try await self.onReader { () throws(EddyError) in
            try self.checkRead(path, query: nil, access)
            return try self.readShallow(path)
        }
    }

    /// `query` for `access`: the check and the read share one trip to a reader thread.
    public func query(_ path: Path, _ query: Query, access: Access) async throws(EddyError) -> Value {
        let definition = try await self.index(path, query, access: access)
        return try await self.onReader { () throws(EddyError) in
            try self.checkRead(path, query: query, access)
            return try self.readQuery(path, query, definition: definition)
        }
    }

    /// `queryJSON` for `access`: the check and the read share one trip to a reader thread.
    public func queryJSON(_ path: Path, _ query: Query, access: Access) async throws(EddyError) -> [UInt8] {
        let definition = try await self.index(path, query, access: access)
        return try await self.onReader { () throws(EddyError) in
            try self.checkRead(path, query: query, access)
            return try self.readQueryJSON(path, query, definition: definition)
        }
    }

    /// The query's index (waiting for one being built). Its errors name the rules' `.indexOn`
    /// entries and a build's progress: a caller who may not read the location gets Firebase's
    /// denial instead.
    func index(_ path: Path, _ query: Query, access: Access) async throws(EddyError) -> IndexDefinition? {
        do {
            return try await self.indexWaitingForBuild(path, query)
        } catch {
            if !access.isAdmin { try await self.onReader { () throws(EddyError) in try self.checkRead(path, query: query, access) } }
            throw error
        }
    }

    /// Runs a blocking call (such as `canRead`) on the reader pool.
    public func onReaderPublic<T: Sendable>(_ body: @escaping @Sendable () throws(EddyError) -> T) async throws(EddyError) -> T {
        try await self.onReader(body)
    }

    /// Whether `access` may read the whole location at `path` (with `query`'s parameters), now.
    /// Blocking: it may read the tree.
    public func canRead(_ path: Path, query: Query?, _ access: Access) -> Bool {
        if access.isAdmin { return true }
        let database = self.database
        let tree = RuleTree(
            reading: { [self] location in try self.readValue(location) },
            readingPriority: { location in try PriorityRecords.priority(in: database, at: location) })
        let context = RuleContext(auth: access.auth, now: Double(self.committer.clock.nowMilliseconds()), tree: tree, newTree: tree)
        return self.securityRules.canRead(path, context, query: { Self.ruleQuery(query) })
    }

    /// Whether the log at `path` may be replayed to `access` (a resumed stream or subscription,
    /// a tail): for the admin, and for a reader whose read rules there depend on neither the data
    /// nor the time. Otherwise its access may have been lost and regained since the entries were
    /// written, and what it missed meanwhile must not reach it: it starts from the current value.
    public func mayReplayLog(at path: Path, _ access: Access) -> Bool {
        access.isAdmin || !self.securityRules.readDependsOnTreeOrTime(path)
    }

    /// Throws Firebase's "Permission denied" unless `canRead`.
    public func checkRead(_ path: Path, query: Query?, _ access: Access) throws(EddyError) {
        guard self.canRead(path, query: query, access) else { throw Self.permissionDenied }
    }

    static let permissionDenied = EddyError(.permissionDenied, "Permission denied")

    /// Rules' `query` variable: Firebase's names, null (or false) where the query does not set
    /// them; a plain read has every one null or false.
    static func ruleQuery(_ query: Query?) -> RuleValue {
        guard let query else { return self.ruleQuery(Query(order: .key)).settingOrderByKey(false) }
        var map: [String: RuleValue] = [
            "orderByKey": .bool(query.order == .key), "orderByValue": .bool(query.order == .value),
            "orderByPriority": .bool(query.order == .priority),
            "orderByChild": query.childPath.map { .string($0.keys.joined(separator: "/")) } ?? .null,
            "startAt": .null, "startAfter": .null, "endAt": .null, "endBefore": .null, "equalTo": .null,
            "limitToFirst": .null, "limitToLast": .null,
        ]
        if let start = query.start, let end = query.end, start.inclusive, end.inclusive, start.value == end.value, start.key == end.key {
            map["equalTo"] = RuleValue(start.value)
        } else {
            if let start = query.start { map[start.inclusive ? "startAt" : "startAfter"] = RuleValue(start.value) }
            if let end = query.end { map[end.inclusive ? "endAt" : "endBefore"] = RuleValue(end.value) }
        }
        switch query.limit {
        case .first(let n)?: map["limitToFirst"] = .number(Double(n))
        case .last(let n)?: map["limitToLast"] = .number(Double(n))
        case nil: break
        }
        return .map(map)
    }
}

private extension RuleValue {
    func settingOrderByKey(_ value: Bool) -> RuleValue {
        guard case .map(var members) = self else { return self }
        members["orderByKey"] = .bool(value)
        return .map(members)
    }
}

/// The outcome of checking a write before it is queued.
enum WritePrecheck {
    /// Allowed under the rules of this version (the committer checks again if they changed).
    case allowed(UInt64)
    case denied
    /// The rules read the stored tree (or the write holds server values): the committer decides.
    case needsTree
}

extension Engine {
    /// Checks a client's write on the caller's thread, off the committer, when the decision
    /// cannot depend on the stored tree (`SecurityRules.decidesWithoutTree`) nor on a push key
    /// not yet made, and the values hold no server values (resolved only when applied). The
    /// committer's own check stays the rule for everything else and for writes whose rules
    /// changed meanwhile, so every write is still judged by the rules in force at its place in
    /// the log.
    func precheck(_ operation: WriteOperation, _ access: Access) -> WritePrecheck {
        let (rules, version) = self.securityRulesHolder.versioned
        // Nothing to decide: no change list or rules trees to build (4% of an event loop under
        // small REST writes on the default rules).
        if rules.allowsEveryWrite { return .allowed(version) }
        var changes: [(path: Path, value: Value)] = []
        switch operation {
        case .set(let path, let value): changes = [(path, value)]
        case .remove(let path): changes = [(path, .null)]
        case .push(let path, let value):
            guard rules.pushKeyIsIrrelevant(under: path) else { return .needsTree }
            // Any key the wildcard would capture decides the same; the committer's id is later.
            changes = [(path.appending(WriteAuthorization.placeholderPushKey), value)]
        case .update(let path, let list): changes = list.map { (path.appending($0.path), $0.value) }
        }
        for change in changes {
            guard !TreeWriter.containsServerValue(change.value), rules.decidesWithoutTree(change.path) else { return .needsTree }
            // A `.priority` write's `newData` is the stored data (`WriteAuthorization`).
            if change.path.lastKey == Value.priorityKey { return .needsTree }
        }
        // Rules see data without priorities, `getPriority()` the export form's (`WriteAuthorization`).
        let exported = changes.filter { $0.value.holdsPriorities }
        changes = changes.map { ($0.path, $0.value.withoutPriorities) }
        // The stored tree is never read for such rules; a read would be a bug, and fails closed.
        let stored = RuleTree(
            reading: { path in throw EddyError(.internal, "a tree-independent rule read \(path)") },
            readingPriority: { path in throw EddyError(.internal, "a tree-independent rule read the priority of \(path)") })
        let after = RuleTree(base: stored, writing: changes, exported: exported)
        let context = RuleContext(auth: access.auth, now: Double(self.committer.clock.nowMilliseconds()), tree: stored, newTree: after)
        for change in changes where !rules.canWrite(change.path, context) { return .denied }
        return .allowed(version)
    }

    /// Throws Firebase's "Permission denied" unless `access` may make `operation` now: the
    /// committer's check (`Committer.authorize`) against the committed tree, server values
    /// resolved as if written now, and nothing written. For writes registered to run later
    /// (onDisconnect): Firebase checks them when they are registered and tells the client at
    /// once; they are checked again when they run. Blocking: it may read the tree.
    public func checkWrite(_ operation: WriteOperation, _ access: Access) throws(EddyError) {
        if access.isAdmin { return }
        // A push's key is made when the write runs; a placeholder in its form stands in.
        try WriteAuthorization.check(
            operation, access, rules: self.securityRules, nowMilliseconds: self.committer.clock.nowMilliseconds(),
            pushedKey: WriteAuthorization.placeholderPushKey, read: { [self] path throws(EddyError) in try self.readValue(path) },
            readPriority: { [database] path in try PriorityRecords.priority(in: database, at: path) })
    }

    /// Counts a write refused before it reached the engine (a body that is not JSON, a bad
    /// update): `eddy_writes_total{outcome=<code>}`, as the engine's own refusals.
    public func recordRefusedWrite(_ error: EddyError) {
        self.metrics.recordRefusal(error)
    }
}
