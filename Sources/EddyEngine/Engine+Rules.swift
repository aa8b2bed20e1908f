// The rules document of a database (`/.settings/rules.json`), kept in the `meta` column family
// under "rules" as canonical JSON. Setting rules replaces the whole document, as Firebase's
// REST API does; `Rules.parse` validates it first, so nothing of a refused document is stored.
// Rules are not part of the tree or the log; a mutex orders concurrent setters.

import EddyModel
import EddyStorage
import Synchronization

extension Engine {
    /// The stored rules, or `Rules.default` when none were set.
    public func rules() throws(EddyError) -> Rules {
        let stored: [UInt8]?
        do {
            stored = try self.database.get(self.database.columnFamily(ColumnFamilies.meta), MetaKeys.rules)
        } catch {
            throw EngineErrors.storage(error, while: "reading the rules")
        }
        guard let stored else { return .default }
        do {
            return try Rules.parse(try JSONParser.parse(stored))
        } catch {
            throw EddyError(.corruption, "stored rules of \(self.directory) are unreadable: \(error.message)")
        }
    }

    /// Validates and stores a rules document (synced), replacing the previous one.
    public func setRules(_ document: Value) throws(EddyError) -> Rules {
        let rules = try Rules.parse(document)
        let failure = self.rulesLock.withLock { _ -> RocksDBError? in
            do {
                try self.database.put(
                    self.database.columnFamily(ColumnFamilies.meta), MetaKeys.rules, JSONWriter.bytes(rules.json),
                    durability: .sync)
                return nil
            } catch let error as RocksDBError {
                return error
            } catch {
                return RocksDBError(code: .other, message: "\(error)")
            }
        }
        if let failure { throw EngineErrors.storage(failure, while: "storing the rules") }
        return rules
    }
}
