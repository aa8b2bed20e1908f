// eddyd's log lines on stderr, one per event, never coloured:
// - under systemd (stderr is the journal: `JOURNAL_STREAM` is set), `<N>label: message k=v ...`
//   where <N> is the syslog priority journald reads (sd-daemon(3)); journald adds the time;
// - otherwise `2026-11-25T16:00:00Z info eddyd: message k=v ...`.
// The level is shared by every logger of the process and can change while it runs
// (`LogLevelControl`, set again on SIGHUP from the config file).

import Foundation
import Logging
import Synchronization

/// The process-wide log level, changeable at run time.
public final class LogLevelControl: Sendable {
    private let level: Mutex<Logger.Level>

    public init(_ level: Logger.Level) {
        self.level = Mutex(level)
    }

    public var current: Logger.Level {
        get { self.level.withLock { $0 } }
        set { self.level.withLock { $0 = newValue } }
    }
}

public struct EddyLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let control: LogLevelControl
    private let journal: Bool

    /// `journal`: write journald priority prefixes instead of timestamps.
    public init(label: String, control: LogLevelControl, journal: Bool = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil) {
        self.label = label
        self.control = control
        self.journal = journal
    }

    public var logLevel: Logger.Level {
        get { self.control.current }
        set { self.control.current = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        FileHandle.standardError.write(Data(self.line(event.level, event.message, event.metadata).utf8))
    }

    public func log(
        level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?, source: String, file: String, function: String,
        line: UInt
    ) {
        FileHandle.standardError.write(Data(self.line(level, message, explicit).utf8))
    }

    /// One line, newline-terminated.
    func line(_ level: Logger.Level, _ message: Logger.Message, _ explicit: Logger.Metadata?) -> String {
        var merged = self.metadata
        if let explicit { merged.merge(explicit) { $1 } }
        let fields = merged.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        // One event, one line: embedded newlines would split it in the journal.
        let text = "\(self.label): \(message)\(fields)".replacingOccurrences(of: "\n", with: "\\n")
        if self.journal { return "<\(Self.priority(level))>\(text)\n" }
        return "\(Date().ISO8601Format()) \(level) \(text)\n"
    }

    /// syslog priorities (sd-daemon(3)).
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }
}
