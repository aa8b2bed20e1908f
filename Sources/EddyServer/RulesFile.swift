// `rules-file`: the default namespace's rules kept as a JSON file (`{"rules": {...}}`, `//` and
// `/* */` comments allowed as in Firebase's rules files), applied
// at start and on SIGHUP. Applying sets the rules only when the document differs from the one in
// force, so a restart with an unchanged file writes nothing. A file that cannot be read or is not
// a valid rules document is refused with its path and the reason; the rules in force stay.

import EddyEngine
import EddyModel
import Foundation
import Logging

enum RulesFile {
    /// Applies the file to the default namespace; true when the rules changed.
    static func apply(_ path: String, to data: DataDirectory, logger: Logger) async throws(EddyError) -> Bool {
        guard let bytes = FileManager.default.contents(atPath: path) else {
            throw EddyError(.invalidArgument, "rules-file \(path) cannot be read")
        }
        let document: Value
        do {
            document = try JSONParser.parse(RulesComments.blanked(Array(bytes)))
        } catch {
            throw EddyError(.invalidJSON, "rules-file \(path) is not JSON: \(error.message)")
        }
        let engine = try data.engine(namespace: DataDirectory.defaultNamespace)
        guard try engine.rules().json != document else { return false }
        let rules: Rules
        do {
            rules = try await engine.setRules(document)
        } catch {
            throw EddyError(error.code, "rules-file \(path): \(error.message)")
        }
        logger.notice("rules set from the rules file", metadata: ["eddy.rules_file": "\(path)", "eddy.indexes": "\(rules.indexes.count)"])
        return true
    }
}
