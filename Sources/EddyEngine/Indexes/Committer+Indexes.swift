// The committer's index work, done between commit groups so it is ordered with every write:
// - `applyRules`: stores a rules document and changes the index catalog to match its
//   `.indexOn` declarations in one synced batch (new indexes start building; removed ones are
//   dropped with a range delete of their entries).
// - `buildStep`: indexes the next `indexBuildChunkChildren` children of the first building
//   index from the committed tree, and records where to resume, in one batch. Writes keep
//   every index (building ones included) up to date through `IndexMaintainer`, so a build only
//   has to cover the children that existed when it started; re-putting an entry a write
//   already made is harmless (same key, same value).

import EddyIndexes
import EddyModel
import EddyStorage
import EddyTree
import Logging

extension Committer {
    var hasBuildWork: Bool {
        self.options.runIndexBuilds && self.failed == nil && self.definitions.contains { !$0.isReady }
    }

    func applyRules(_ rules: Rules) -> Result<Rules, EddyError> {
        if let failed = self.failed { return .failure(failed) }
        var wanted: [Rules.IndexDeclaration] = []
        var identities = Set<String>()
        for declaration in rules.indexes where identities.insert(IndexDefinition.identity(declaration)).inserted {
            wanted.append(declaration)
        }
        guard wanted.count <= Limits.indexCountMax else {
            return .failure(
                EddyError(
                    .limitExceeded,
                    "the rules declare \(wanted.count) indexes; indexCountMax is \(Limits.indexCountMax); nothing was changed"))
        }
        let meta = self.database.columnFamily(ColumnFamilies.meta)
        let index = self.database.columnFamily(ColumnFamilies.index)
        let batch = WriteBatch()
        var next: [IndexDefinition] = []
        var nextID = self.nextIndexID
        let now = self.clock.nowMilliseconds()
        var dropped: [IndexDefinition] = []
        for definition in self.definitions {
            guard let declaration = wanted.first(where: { IndexDefinition.identity($0) == definition.identity }) else {
                batch.delete(meta, definition.metaKey)
                batch.deleteRange(index, from: definition.keyPrefix, to: definition.keyPrefix + [0xFF])
                dropped.append(definition)
                continue
            }
            var kept = definition
            kept = IndexDefinition(
                id: kept.id, declaration: declaration, state: kept.state, indexedCount: kept.indexedCount,
                createdMilliseconds: kept.createdMilliseconds, readyMilliseconds: kept.readyMilliseconds)
            if kept.declaration != definition.declaration { batch.put(meta, kept.metaKey, JSONWriter.bytes(kept.record)) }
            next.append(kept)
        }
        var added: [IndexDefinition] = []
        for declaration in wanted where !next.contains(where: { $0.identity == IndexDefinition.identity(declaration) }) {
            let definition = IndexDefinition(
                id: nextID, declaration: declaration, state: .building(resumeKey: []), indexedCount: 0,
                createdMilliseconds: now, readyMilliseconds: nil)
            nextID += 1
            batch.put(meta, definition.metaKey, JSONWriter.bytes(definition.record))
            next.append(definition)
            added.append(definition)
        }
        batch.put(meta, MetaKeys.indexNextID, IndexDefinition.keyPrefix(nextID))
        batch.put(meta, MetaKeys.rules, JSONWriter.bytes(rules.json))
        do {
            try self.database.write(batch, durability: .sync)
        } catch {
            // Nothing of the batch applied (it is atomic); the engine keeps running.
            return .failure(EngineErrors.storage(error, while: "storing the rules"))
        }
        next.sort { $0.id < $1.id }
        self.install(next)
        self.security = SecurityRulesHolder.compile(rules, logger: self.logger)
        self.securityVersion = self.securityHolder.publish(self.security)
        self.nextIndexID = nextID
        for definition in added { self.logger.info("index building", metadata: ["eddy.index": "\(definition.description)"]) }
        for definition in dropped { self.logger.info("index dropped", metadata: ["eddy.index": "\(definition.description)"]) }
        return .success(rules)
    }

    private func install(_ definitions: [IndexDefinition]) {
        self.definitions = definitions
        self.treeWriter.indexes.definitions = definitions
        self.catalog.publish(definitions)
    }

    /// One chunk of the first building index.
    func buildStep() {
        guard let position = self.definitions.firstIndex(where: { !$0.isReady }) else { return }
        var definition = self.definitions[position]
        guard case .building(let resumeKey) = definition.state else { return }
        let tree = self.database.makeIterator(self.database.columnFamily(ColumnFamilies.tree))
        var scan = IndexChildScan(definition: definition, tree: tree, from: resumeKey.isEmpty ? nil : resumeKey)
        let batch = WriteBatch()
        let index = self.database.columnFamily(ColumnFamilies.index)
        var entries: [(key: [UInt8], value: [UInt8])] = []
        entries.reserveCapacity(self.options.indexBuildChunkChildren)
        do {
            while entries.count < max(1, self.options.indexBuildChunkChildren), let entry = try scan.nextEntry() {
                entries.append(entry)
            }
        } catch {
            self.fail(error)
            return
        }
        // In key order, each memtable insert starts next to the previous one.
        entries.sort { $0.key.lexicographicallyPrecedes($1.key) }
        for entry in entries { batch.put(index, entry.key, entry.value) }
        let count = entries.count
        definition.indexedCount += count
        if let resume = scan.resumeKey {
            definition.state = .building(resumeKey: resume)
        } else {
            definition.state = .ready
            definition.readyMilliseconds = self.clock.nowMilliseconds()
        }
        batch.put(self.database.columnFamily(ColumnFamilies.meta), definition.metaKey, JSONWriter.bytes(definition.record))
        do {
            try self.database.write(batch, durability: self.storageDurability)
        } catch {
            self.fail(EngineErrors.storage(error, while: "writing index entries of \(definition.description)"))
            return
        }
        if definition.isReady { self.settle(definition) }
        var next = self.definitions
        next[position] = definition
        self.install(next)
        if case .building(let resume) = definition.state, ContinuousClock.now >= self.nextBuildProgressLog {
            self.nextBuildProgressLog = ContinuousClock.now.advanced(by: .seconds(10))
            self.logger.info(
                "index building",
                metadata: [
                    "eddy.index": "\(definition.description)", "eddy.children": "\(definition.indexedCount)",
                    "eddy.position": "\(Engine.describeTreeKey(resume, segmentsMax: definition.depth + 1))",
                ])
        }
        if definition.isReady {
            self.logger.info(
                "index ready", metadata: ["eddy.index": "\(definition.description)", "eddy.children": "\(definition.indexedCount)"])
        }
    }

    /// Gives a finished build's entries the shape queries read fastest, before the index is
    /// published ready (so whoever waits for readiness can also wait for this):
    /// - the memtable, where windows scan slowly (a skiplist step per entry, a search per step
    ///   backward), is flushed to a table file now;
    /// - the build's chunks landed in level-0 files that each span the whole index, so every
    ///   seek searched each of them; a background compaction of the index's range makes them one
    ///   sorted run (1 M children: `equalTo` 14 -> 10 us, `limitToLast(100)` 45 -> 38 us).
    private func settle(_ definition: IndexDefinition) {
        let index = self.database.columnFamily(ColumnFamilies.index)
        do {
            try self.database.flush(index, wait: false)
        } catch {
            self.logger.warning("flushing index entries after a build failed", metadata: ["eddy.error": "\(error)"])
        }
        let logger = self.logger
        let description = definition.description
        self.database.compactInBackground(index, from: definition.keyPrefix, to: definition.keyPrefix + [0xFF]) { took in
            logger.info("index compacted", metadata: ["eddy.index": "\(description)", "eddy.seconds": "\(took.seconds)"])
        }
    }
}
