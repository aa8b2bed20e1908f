// eddyd's log lines: journald priority prefixes under systemd, timestamps otherwise, one line
// per event, and a level that changes for every logger at once.

import Logging
import Testing

@testable import EddyServer

@Suite struct EddyLogHandlerTests {
    @Test func journalLinesCarryTheSyslogPriorityAndNoTimestamp() {
        let handler = EddyLogHandler(label: "eddyd", control: LogLevelControl(.info), journal: true)
        #expect(handler.line(.error, "commit failed", ["eddy.path": "/a"]) == "<3>eddyd: commit failed eddy.path=/a\n")
        #expect(handler.line(.info, "listening", nil) == "<6>eddyd: listening\n")
        #expect(handler.line(.warning, "two\nlines", nil) == "<4>eddyd: two\\nlines\n")
    }

    @Test func terminalLinesStartWithTimeAndLevel() {
        let handler = EddyLogHandler(label: "eddyd", control: LogLevelControl(.info), journal: false)
        let line = handler.line(.notice, "started", nil)
        #expect(line.hasSuffix(" notice eddyd: started\n"))
        #expect(line.first?.isNumber == true)
        #expect(!line.contains("\u{1B}"))  // never an ANSI colour
    }

    @Test func oneControlSetsTheLevelOfEveryLogger() {
        let control = LogLevelControl(.info)
        let a = EddyLogHandler(label: "a", control: control, journal: true)
        let b = EddyLogHandler(label: "b", control: control, journal: true)
        #expect(a.logLevel == .info && b.logLevel == .info)
        control.current = .debug
        #expect(a.logLevel == .debug && b.logLevel == .debug)
    }
}
