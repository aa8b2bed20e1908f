// Reads that answer priorities: `format=export` values and queries, a location's own priority
// (`<path>/.priority`), and priority-ordered queries over children that have priorities. Each
// reads `tree` and `priority` on one snapshot. Everything else reads `tree` alone, which never
// holds priorities (Firebase's default answers carry none).
//
// A priority-ordered query whose children have no priority is key order (`Engine+Query`,
// `Query.keyQueryForNullPriorities`); once one child has a priority, the query reads the whole
// location and orders it in memory (`QueryWindow`): priorities have no index.

import EddyIndexes
import EddyModel
import EddyStorage
import EddyTree

extension Engine {
    /// The value at `path` in Firebase's export form (`.priority` members, `{".value": v,
    /// ".priority": p}` primitives) for `access`.
    public func getExport(_ path: Path, access: Access) async throws(EddyError) -> Value {
        try await self.onReader { () throws(EddyError) in
            try self.checkRead(path, query: nil, access)
            return try self.readExportValue(path)
        }
    }

    /// The priority of the node at `path` (`.null` when it has none or does not exist) for
    /// `access`, which needs read access to the node.
    public func priority(_ path: Path, access: Access) async throws(EddyError) -> Value {
        try await self.onReader { () throws(EddyError) in
            try self.checkRead(path, query: nil, access)
            return try PriorityRecords.priority(in: self.database, at: path)
        }
    }

    /// The children `query` selects at `path`, in export form, for `access`: selected as any
    /// query is (an index, key order, or the stored priorities), then each selected child read
    /// with the priorities under it (a read of the location's size only where a priority-ordered
    /// query needs it). The selection and the priorities are read on one snapshot, so a write
    /// in between never shows a child's new priority with its old value.
    public func queryExport(_ path: Path, _ query: Query, access: Access) async throws(EddyError) -> Value {
        let definition = try await self.index(path, query, access: access)
        return try await self.onReader { () throws(EddyError) in
            try self.checkRead(path, query: query, access)
            return try self.readQueryExport(path, query, definition: definition)
        }
    }

    /// Blocking read of `queryExport`'s answer. `afterSelection` runs between the selection and
    /// the priorities' read (tests write there).
    func readQueryExport(
        _ path: Path, _ query: Query, definition: IndexDefinition?, afterSelection: (() -> Void)? = nil
    ) throws(EddyError) -> Value {
        let snapshot = self.database.makeSnapshot()
        let selected = try self.readQuery(path, query, definition: definition, on: snapshot)
        afterSelection?()
        guard case .object(var children) = selected, let family = self.database.columnFamilyIfPresent(ColumnFamilies.priority) else {
            return selected
        }
        let iterator = self.database.makeIterator(family, snapshot: snapshot)
        for (key, child) in children {
            let prefix = PathKeyEncoding.encode(path.appending(key))
            let records = try PriorityRecords.records(iterator, under: prefix)
            if !records.isEmpty { children[key] = try PriorityRecords.merging(records, into: child, prefix: prefix) }
        }
        return .object(children)
    }

    /// Whether a node at or below `path` has a priority (when not, the export form at `path`
    /// is the plain value, which bounded reads such as `getJSON` answer). One seek.
    public func holdsPriorities(at path: Path) async throws(EddyError) -> Bool {
        try await self.onReader { () throws(EddyError) in
            guard let family = self.database.columnFamilyIfPresent(ColumnFamilies.priority) else { return false }
            let prefix = PathKeyEncoding.encode(path)
            let iterator = self.database.makeIterator(family)
            iterator.seek(prefix, within: prefix)
            let found = iterator.isValid && iterator.keyHasPrefix(prefix)
            try TreeReader.check(iterator)
            return found
        }
    }

    /// Blocking read of the export form at `path`.
    public func readExportValue(_ path: Path) throws(EddyError) -> Value {
        guard let family = self.database.columnFamilyIfPresent(ColumnFamilies.priority) else { return try self.readValue(path) }
        let snapshot = self.database.makeSnapshot()
        return try PriorityRecords.exportValue(
            tree: self.database.makeIterator(self.database.columnFamily(ColumnFamilies.tree), snapshot: snapshot),
            priorities: self.database.makeIterator(family, snapshot: snapshot), prefix: PathKeyEncoding.encode(path))
    }

    /// The answer of a priority-ordered query at `path` when a child there has a priority
    /// (without priorities, as every query answers); nil when none has, so key order serves.
    /// `on`: the snapshot to read (nil: a new one).
    func readPriorityQuery(_ path: Path, _ query: Query, on given: Snapshot? = nil) throws(EddyError) -> Value? {
        guard query.order == .priority, let family = self.database.columnFamilyIfPresent(ColumnFamilies.priority) else { return nil }
        let location = PathKeyEncoding.encode(path)
        let snapshot = given ?? self.database.makeSnapshot()
        let priorities = self.database.makeIterator(family, snapshot: snapshot)
        priorities.seek(location, within: location)
        if priorities.isValid, priorities.key == location { priorities.next() }  // the location's own
        let childHasOne = priorities.isValid && priorities.keyHasPrefix(location)
        try TreeReader.check(priorities)
        guard childHasOne else { return nil }
        let value = try PriorityRecords.exportValue(
            tree: self.database.makeIterator(self.database.columnFamily(ColumnFamilies.tree), snapshot: snapshot),
            priorities: priorities, prefix: location)
        return Self.window(of: value, query).withoutPriorities
    }

    /// The children of `value` (export form) that `query` selects, as an object.
    static func window(of value: Value, _ query: Query) -> Value {
        guard case .object(var children) = value, children[Value.wrappedValueKey] == nil else { return .null }
        children.removeValue(forKey: Value.priorityKey)
        let keys = QueryWindow.select(children.map { ($0.key, QueryWindow.sortValue(of: $0.value, query.order)) }, query)
        var out: [String: Value] = [:]
        for key in keys { out[key] = children[key] }
        return out.isEmpty ? .null : .object(out)
    }
}
