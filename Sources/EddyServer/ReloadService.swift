// SIGHUP (`systemctl reload eddyd`): reread the config file and apply what can change while
// running, without dropping a connection: today the log level. Other options (listeners,
// credentials, TLS files, limits) take effect at the next restart, and the log says so. A config
// file that no longer parses changes nothing and is logged as an error; the daemon runs on.

import EddyModel
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

struct ReloadService: Service {
    let configFile: String?
    let control: LogLevelControl
    let logger: Logger

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        await withGracefulShutdownHandler {
            for await _ in signals.cancelOnGracefulShutdown() { self.reload() }
        } onGracefulShutdown: {}
    }

    /// Applies the config file's log level; returns the level now in force.
    @discardableResult
    func reload() -> Logger.Level {
        guard let configFile else {
            self.logger.notice("SIGHUP: no --config file to reread; nothing changed")
            return self.control.current
        }
        do throws(EddyError) {
            let text: String
            do {
                text = try String(contentsOfFile: configFile, encoding: .utf8)
            } catch {
                throw EddyError(.invalidArgument, "cannot read config file \(configFile): \(error.localizedDescription)")
            }
            var fresh = ServeConfiguration()
            try fresh.apply(configFile: ConfigFile.parse(text, path: configFile), path: configFile)
            guard let level = Logger.Level(rawValue: fresh.logLevel) else {
                throw EddyError(.invalidArgument, "\(configFile): log-level \"\(fresh.logLevel)\" is not one of trace, debug, info, notice, warning, error, critical")
            }
            let previous = self.control.current
            self.control.current = level
            self.logger.notice(
                "SIGHUP: reread the config file; other options take effect at the next restart",
                metadata: ["eddy.config": "\(configFile)", "eddy.log_level": "\(previous) -> \(level)"])
        } catch {
            self.logger.error("SIGHUP: config file not applied; nothing changed", metadata: ["eddy.error": "\(error.message)"])
        }
        return self.control.current
    }
}
