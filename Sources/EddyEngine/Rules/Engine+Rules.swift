// The rules document of a database (`/.settings/rules.json`), kept in the `meta` column family
// under "rules" as canonical JSON. Setting rules replaces the whole document, as Firebase's
// REST API does; `Rules.parse` validates it first, so nothing of a refused document is stored.
// Rules are not part of the tree or the log; the committer applies rules changes between write
// groups, together with the index catalog changes they imply (`Committer+Indexes.swift`).

import EddyModel
import EddyStorage
import EddyTree

extension Engine {
    /// The stored rules, or `options.defaultRules` when none were set.
    public func rules() throws(EddyError) -> Rules {
        try Self.storedRules(self.database) ?? self.options.defaultRules
    }

    /// Changes whenever the rules change (after the new document is stored): a reader that
    /// only needs to notice a change compares this instead of reading the document.
    public var rulesVersion: UInt64 { self.securityRulesHolder.versioned.version }

    /// The rules document stored in `database`, nil when none was ever set.
    static func storedRules(_ database: Database) throws(EddyError) -> Rules? {
        let stored: [UInt8]?
        do {
            stored = try database.get(database.columnFamily(ColumnFamilies.meta), MetaKeys.rules)
        } catch {
            throw EngineErrors.storage(error, while: "reading the rules")
        }
        guard let stored else { return nil }
        do {
            return try Rules.parse(try JSONParser.parse(stored))
        } catch {
            throw EddyError(.corruption, "stored rules of \(database.path) are unreadable: \(error.message)")
        }
    }

    /// Validates and stores a rules document (synced), replacing the previous one, and changes
    /// the index catalog to match its `.indexOn` declarations: new indexes start building
    /// online (see `indexStatus()`), removed ones are dropped with their entries. The change is
    /// applied by the committer between write groups, so it is ordered with every write.
    /// Refused on a follower (`notLeader`): its rules come from the leader.
    public func setRules(_ document: Value) async throws(EddyError) -> Rules {
        try self.checkLeader()
        let bytes = JSONWriter.bytes(document, arrays: false).count
        guard bytes <= Limits.rulesDocumentBytesMax else {
            throw EddyError(
                .invalidValue,
                "the rules document is \(bytes) bytes as JSON; rulesDocumentBytesMax is \(Limits.rulesDocumentBytesMax) (Firebase's 256 KB rules size limit)")
        }
        // Every .read/.write/.validate expression must compile (Firebase refuses the document,
        // and the old rules stay). Checked here, not in `Rules.parse`, so a document stored by an
        // older version still loads.
        try Rules.checkOneWildcardPerLevel(document)
        if case .object(let top) = document, let rules = top["rules"] {
            do {
                _ = try SecurityRules.compile(rules)
                try RulesDeployCheck.check(rules)
            } catch {
                throw EddyError(.invalidValue, error.description, underlying: error)
            }
        }
        return try await self.storeRules(document)
    }

    /// On a follower: stores the leader's rules document, with the same index catalog changes.
    public func applyReplicatedRules(_ document: Value) async throws(EddyError) -> Rules {
        try await self.storeRules(document)
    }

    private func storeRules(_ document: Value) async throws(EddyError) -> Rules {
        let rules = try Rules.parse(document)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Rules, EddyError>, Never>) in
            let request = ControlRequest.setRules(rules, continuation)
            if let refused = self.queue.enqueueControl(request) { request.refuse(refused) }
        }
        return try result.get()
    }
}
