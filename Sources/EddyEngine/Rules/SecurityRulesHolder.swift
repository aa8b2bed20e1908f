// Folder Rules/: security rules as the engine enforces them: who acts (`Access`, from EddyModel),
// read checks on reader threads, write checks in the committer, rules changes. Invariant: a
// denied request applies and logs nothing.
//
// The compiled rules the engine's security-rules checks use (`Access`, who acts, is EddyModel's).
// `SecurityRulesHolder` publishes the rules the committer installed; the committer reads its own
// copy, so a write is checked against exactly the rules in force at its place in the log.

import EddyModel
import Logging
import Synchronization

/// The compiled rules currently in force (read by readers and listeners; set by the committer),
/// with a version that every change bumps.
final class SecurityRulesHolder: Sendable {
    private let current: Mutex<(rules: SecurityRules, version: UInt64)>

    init(_ rules: SecurityRules) {
        self.current = Mutex((rules, 1))
    }

    var rules: SecurityRules { self.current.withLock { $0.rules } }

    var versioned: (rules: SecurityRules, version: UInt64) { self.current.withLock { $0 } }

    /// Publishes `rules`; returns their version.
    func publish(_ rules: SecurityRules) -> UInt64 {
        self.current.withLock { current in
            current = (rules, current.version + 1)
            return current.version
        }
    }

    /// The compiled form of a rules document. A document that no longer compiles (stored by an
    /// older version, or replicated from one) locks the database rather than opening it, and
    /// says so in the log.
    static func compile(_ rules: Rules, logger: Logger) -> SecurityRules {
        guard case .object(let top) = rules.json, let body = top["rules"] else { return .locked }
        do {
            return try SecurityRules.compile(body)
        } catch {
            logger.error(
                "the stored rules no longer compile; every request to this database is denied until rules are set again",
                metadata: ["eddy.error": "\(error)"])
            return .locked
        }
    }
}
