// SIGHUP (`systemctl reload eddyd`): apply what can change while running, without dropping a
// connection, each part on its own (one that fails is logged as an error and changes nothing;
// the others still apply, and the daemon runs on):
// - the config file (`--config`) is reread: its `log-level` applies, and its `rules-file` names
//   the rules file to apply below;
// - the rules file (`rules-file`) is reread and set as the default namespace's rules when it
//   differs from the rules in force (an ordinary rules change: logged, replicated);
// - the TLS certificate and key files are reread: new connections get the new pair
//   (`ServerCertificate`), open ones keep theirs;
// - the credential files (`admin-token-file`, `jwt-secret-file`, `jwt-keys-file`) are reread:
//   a rotated admin secret or Firebase's next public keys apply to the next request.
// Other options (listeners, limits, file paths other than the rules file's) take effect at the
// next restart, and the log says so.

import EddyEngine
import EddyModel
import EddyReplication
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

struct ReloadService: Service {
    /// The configuration the daemon started with (its file paths are reread).
    let started: ServeConfiguration
    let control: LogLevelControl
    let certificate: ServerCertificate?
    let authenticator: Authenticator
    let data: DataDirectory
    let logger: Logger

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        await withGracefulShutdownHandler {
            for await _ in signals.cancelOnGracefulShutdown() { await self.reload() }
        } onGracefulShutdown: {}
    }

    /// What one SIGHUP changed, for the log and tests.
    struct Outcome {
        var logLevel: Logger.Level
        var rulesChanged = false
        var failures: [(part: String, message: String)] = []
    }

    @discardableResult
    func reload() async -> Outcome {
        var outcome = Outcome(logLevel: self.control.current)
        if self.started.configFile == nil, self.started.rulesFile == nil, self.certificate == nil, !self.started.authConfigured {
            self.logger.notice("SIGHUP: no --config file, rules file, TLS or credential files to reread; nothing changed")
            return outcome
        }
        var rulesFile = self.started.rulesFile
        if let configFile = self.started.configFile {
            do throws(EddyError) {
                let fresh = try Self.read(configFile)
                guard let level = Logger.Level(rawValue: fresh.logLevel) else {
                    throw EddyError(
                        .invalidArgument, "\(configFile): log-level \"\(fresh.logLevel)\" is not one of trace, debug, info, notice, warning, error, critical")
                }
                let previous = self.control.current
                self.control.current = level
                outcome.logLevel = level
                rulesFile = fresh.rulesFile ?? rulesFile
                self.logger.notice(
                    "SIGHUP: reread the config file; options other than log-level, rules-file, TLS and credential files take effect at the next restart",
                    metadata: ["eddy.config": "\(configFile)", "eddy.log_level": "\(previous) -> \(level)"])
            } catch {
                outcome.failures.append(("config file", error.message))
            }
        }
        if let rulesFile {
            do throws(EddyError) {
                outcome.rulesChanged = try await RulesFile.apply(rulesFile, to: self.data, logger: self.logger)
            } catch {
                outcome.failures.append(("rules file", error.message))
            }
        }
        if let certificate = self.certificate {
            do throws(EddyError) {
                try certificate.reload()
                self.logger.notice("SIGHUP: reread the TLS certificate and key; new connections use them", metadata: ["eddy.tls_cert": "\(certificate.certificateFile)"])
            } catch {
                outcome.failures.append(("TLS files", error.message))
            }
        }
        if self.started.authConfigured {
            do throws(EddyError) {
                try await self.authenticator.reload(try EddyServer.authenticatorConfiguration(self.started))
                self.logger.notice("SIGHUP: reread the credential files")
            } catch {
                outcome.failures.append(("credential files", error.message))
            }
        }
        for failure in outcome.failures {
            self.logger.error("SIGHUP: \(failure.part) not applied; nothing of it changed", metadata: ["eddy.error": "\(failure.message)"])
        }
        return outcome
    }

    private static func read(_ configFile: String) throws(EddyError) -> ServeConfiguration {
        let text: String
        do {
            text = try String(contentsOfFile: configFile, encoding: .utf8)
        } catch {
            throw EddyError(.invalidArgument, "cannot read config file \(configFile): \(error.localizedDescription)")
        }
        var fresh = ServeConfiguration()
        try fresh.apply(configFile: ConfigFile.parse(text, path: configFile), path: configFile)
        return fresh
    }
}
