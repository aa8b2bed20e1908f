// Folder Read/: reads that never mutate: key-ordered queries here (index-ordered ones through
// EddyIndexes), exports and streamed reads (TreeJSONStream). Invariant: a read sees one
// consistent state (one iterator or one snapshot).
//
// Ordered queries. Key order needs no index: children of a location are a contiguous,
// key-ordered range of the tree, so a query seeks to its window and reads exactly the children
// in it (forward, or backward for limitToLast), skipping nothing it did not need.
// Value and child orders read an index (`IndexQueryReader`); without a declared `.indexOn`
// they are refused with Firebase's "Index not defined" text, which is what Firebase's REST API
// answers for an unindexed query.

import EddyIndexes
import EddyModel
import EddyStorage
import EddyTree

extension Engine {
    /// The children of `path` that `query` selects, as an object (`.null` when none). A query on
    /// a primitive selects nothing. Value and child orders need an index; while it is still
    /// building this waits up to `Limits.indexWaitSecondsMax`, then throws `unavailable`.
    public func query(_ path: Path, _ query: Query) async throws(EddyError) -> Value {
        let definition = try await self.indexWaitingForBuild(path, query)
        return try await self.onReader { () throws(EddyError) in try self.readQuery(path, query, definition: definition) }
    }

    /// Blocking variant of `query`; does not wait for a building index.
    public func readQuery(_ path: Path, _ query: Query) throws(EddyError) -> Value {
        try self.readQuery(path, query, definition: try self.index(for: path, query))
    }

    /// The JSON text of `query`'s answer, as the REST API sends it: covered index entries are
    /// joined as stored, never decoded. Members come in query order (Firebase's REST answers
    /// are unordered objects; clients sort). Waits for a building index like `query`.
    public func queryJSON(_ path: Path, _ query: Query) async throws(EddyError) -> [UInt8] {
        let definition = try await self.indexWaitingForBuild(path, query)
        return try await self.onReader { () throws(EddyError) in try self.readQueryJSON(path, query, definition: definition) }
    }

    /// Blocking variant of `queryJSON`; does not wait for a building index.
    public func readQueryJSON(_ path: Path, _ query: Query) throws(EddyError) -> [UInt8] {
        try self.readQueryJSON(path, query, definition: try self.index(for: path, query))
    }

    /// `on`: read that snapshot (nil: the newest state).
    func readQuery(_ path: Path, _ query: Query, definition: IndexDefinition?, on snapshot: Snapshot? = nil) throws(EddyError) -> Value {
        let start = ContinuousClock.now
        defer { self.metrics.queryTimer(indexed: definition != nil).recordSince(start) }
        guard let definition else {
            if let answer = try self.readPriorityQuery(path, query, on: snapshot) { return answer }
            return try self.keyQueryReader(path, query, on: snapshot)?.read() ?? .null
        }
        if let snapshot { return try self.indexQueryReader(definition, path, query, on: snapshot).read() }
        let reader = self.indexQueryReader(definition, path, query)
        do {
            return try reader.read()
        } catch where reader.stateMoved {
            return try self.indexQueryReader(definition, path, query, on: self.database.makeSnapshot()).read()
        }
    }

    /// `beforeTree` runs when the read first needs the tree (tests change the database there).
    func readQueryJSON(
        _ path: Path, _ query: Query, definition: IndexDefinition?, beforeTree: (() -> Void)? = nil
    ) throws(EddyError) -> [UInt8] {
        let start = ContinuousClock.now
        defer { self.metrics.queryTimer(indexed: definition != nil).recordSince(start) }
        guard let definition else {
            if let answer = try self.readPriorityQuery(path, query) { return JSONWriter.bytes(answer) }
            return try self.keyQueryReader(path, query)?.readJSON() ?? Array("null".utf8)
        }
        let reader = self.indexQueryReader(definition, path, query, beforeTree: beforeTree)
        do {
            return try reader.readJSON()
        } catch where reader.stateMoved {
            return try self.indexQueryReader(definition, path, query, on: self.database.makeSnapshot()).readJSON()
        }
    }

    /// Key order, or priority order where no child has a priority
    /// (`Query.keyQueryForNullPriorities`: nil when it selects nothing).
    private func keyQueryReader(_ path: Path, _ query: Query, on snapshot: Snapshot? = nil) -> KeyQueryReader? {
        guard let keyQuery = query.order == .priority ? query.keyQueryForNullPriorities : query else { return nil }
        let tree = self.database.columnFamily(ColumnFamilies.tree)
        let iterator = snapshot.map { self.database.makeIterator(tree, snapshot: $0) } ?? self.database.makeCurrentIterator(tree)
        return KeyQueryReader(iterator: iterator, location: PathKeyEncoding.encode(path), query: keyQuery)
    }

    /// A reader over the newest state: the index iterator (pooled) and, when an entry is not
    /// covered, a tree iterator of the same state. When the database changed before the tree
    /// iterator was needed, the reader stops with `stateMoved`, and the read is done again
    /// on a new snapshot (`on`: both iterators on that snapshot, the tree's made lazily).
    private func indexQueryReader(
        _ definition: IndexDefinition, _ path: Path, _ query: Query, on given: Snapshot? = nil, beforeTree: (() -> Void)? = nil
    ) -> IndexQueryReader {
        let indexFamily = self.database.columnFamily(ColumnFamilies.index)
        let treeFamily = self.database.columnFamily(ColumnFamilies.tree)
        if given == nil {
            let index = self.database.makeCurrentIterator(indexFamily)
            if let view = index.view {
                return IndexQueryReader(
                    definition: definition, index: index,
                    makeTree: {
                        beforeTree?()
                        return self.database.makeCurrentIterator(treeFamily, at: view)
                    },
                    location: PathKeyEncoding.encode(path), query: query)
            }
        }
        let snapshot = given ?? self.database.makeSnapshot()
        return IndexQueryReader(
            definition: definition,
            index: self.database.makeIterator(indexFamily, snapshot: snapshot),
            makeTree: { self.database.makeIterator(treeFamily, snapshot: snapshot) },
            location: PathKeyEncoding.encode(path), query: query)
    }

    /// The ready index serving `query` at `path` (nil for key and priority order, which need none).
    /// Throws Firebase's "Index not defined" when no `.indexOn` declares one, `unavailable`
    /// while it is still building.
    func index(for path: Path, _ query: Query) throws(EddyError) -> IndexDefinition? {
        let on: Rules.IndexDeclaration.On
        switch query.order {
        case .key, .priority:
            return nil  // priority order is key order with every priority null (no index)
        case .value:
            on = .value
        case .child(let childPath):
            on = .child(childPath)
        }
        // The first ready index that serves it, else the first still building (no array made:
        // this runs for every query).
        var building: IndexDefinition? = nil
        for definition in self.indexCatalog.definitions where definition.declaration.on == on && definition.declaration.matches(path) {
            if definition.isReady { return definition }
            if building == nil { building = definition }
        }
        if let building {
            throw EddyError(
                .unavailable,
                "the index \".indexOn\": \"\(query.indexOnName ?? "")\" for path \"\(path)\" is still building (\(building.indexedCount) children indexed so far); retry shortly (progress: GET /.settings/indexes.json or eddy index status --url; offline, eddy index build finishes it)"
            )
        }
        throw EddyError(
            .invalidArgument,
            "Index not defined, add \".indexOn\": \"\(query.indexOnName ?? "")\", for path \"\(path)\", to the rules")
    }

    /// `index(for:)`, waiting up to `Limits.indexWaitSecondsMax` for a building index.
    func indexWaitingForBuild(_ path: Path, _ query: Query) async throws(EddyError) -> IndexDefinition? {
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int(Limits.indexWaitSecondsMax * 1000)))
        while true {
            do {
                return try self.index(for: path, query)
            } catch where error.code == .unavailable && ContinuousClock.now < deadline && self.options.runIndexBuilds {
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
    }
}
