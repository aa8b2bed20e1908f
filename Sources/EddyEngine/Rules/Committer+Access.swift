// Authorization in the committer: a write is checked (`WriteAuthorization`) against the rules in
// force at its place in the log and the tree exactly as the writes before it left it, read
// lazily through the group's batch, so the check and the write are atomic (no other write can
// slip between them) and nothing of a denied write is applied. Reads are checked over the
// committed tree between groups, or over the batch inside one (a 412's value, a listener whose
// read rules depend on the data).

import EddyModel
import EddyStorage
import EddyTree

extension Committer {
    func authorize(_ operation: WriteOperation, _ access: Access, nowMilliseconds now: UInt64, pushedKey: String) throws(EddyError) {
        let writer = self.treeWriter
        try WriteAuthorization.check(
            operation, access, rules: self.security, nowMilliseconds: now, pushedKey: pushedKey,
            read: { path throws(EddyError) in try writer.currentValue(at: path) }, readPriority: { path in try writer.currentPriority(at: path) })
    }

    /// `canRead` over the tree as the group's writes so far left it (for `EventRouter.endWrite`).
    func canReadInGroup(_ location: Path, _ query: Query?, _ access: Access) -> Bool {
        self.canRead(location, query: query, access, inGroup: true)
    }

    /// Whether `access` may read the whole location: between groups over the committed tree;
    /// `inGroup`, over the tree as the group's earlier writes left it.
    func canRead(_ location: Path, query: Query?, _ access: Access, inGroup: Bool = false) -> Bool {
        if access.isAdmin { return true }
        let tree: RuleTree
        if inGroup {
            let writer = self.treeWriter
            tree = RuleTree(reading: { path in try writer.currentValue(at: path) }, readingPriority: { path in try writer.currentPriority(at: path) })
        } else {
            let database = self.database
            let family = database.columnFamily(ColumnFamilies.tree)
            tree = RuleTree(
                reading: { path in try TreeReader.readSubtree(database.makeIterator(family), prefix: PathKeyEncoding.encode(path)).value },
                readingPriority: { path in try PriorityRecords.priority(in: database, at: path) })
        }
        // A plain listen (no query) has every `query` member null or false; one that named
        // `orderBy="$key"` alone has `query.orderByKey` true, as on a GET.
        let context = RuleContext(auth: access.auth, now: Double(self.clock.nowMilliseconds()), tree: tree, newTree: tree)
        return self.security.canRead(location, context, query: { Engine.ruleQuery(query) })
    }
}
