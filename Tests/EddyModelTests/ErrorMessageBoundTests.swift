// Error messages are bounded: a message quoting a 15 MiB input keeps its head and its tail,
// says how much was left out, and stays valid UTF-8 whatever the characters around the cuts.

import EddyModel
import Foundation
import Testing

@Suite struct ErrorMessageBoundTests {
    @Test func shortMessagesAreUnchanged() {
        let message = "since x is not a log id"
        #expect(ErrorMessageBound.bounded(message) == message)
        let exactly = String(repeating: "é", count: ErrorMessageBound.bytesMax / 2)
        #expect(ErrorMessageBound.bounded(exactly) == exactly)
    }

    @Test func aLongQuoteKeepsTheHeadTheTailAndTheCount() {
        let quoted = String(repeating: "9", count: 15 << 20)
        let error = EddyError(.invalidArgument, "since \(quoted) is not a log id")
        #expect(error.message.utf8.count <= ErrorMessageBound.bytesMax + 64)
        #expect(error.message.hasPrefix("since 999"))
        #expect(error.message.hasSuffix("999 is not a log id"))
        let omitted = (15 << 20) + "since  is not a log id".utf8.count - 2048 - 1024
        #expect(error.message.contains("[... \(omitted) bytes left out ...]"), "\(error.message.prefix(100))")
    }

    @Test func cutsFallBetweenCharactersOfEveryWidth() {
        // Widths 1 to 4, so every cut position meets each kind of boundary in some round.
        let alphabet: [Character] = ["a", "é", "€", "😀"]
        for shift in 0..<8 {
            let message = String((0..<10_000).map { alphabet[($0 + shift) % alphabet.count] })
            let bounded = ErrorMessageBound.bounded(message)
            #expect(bounded.utf8.count <= ErrorMessageBound.bytesMax + 64)
            #expect(String(validating: Array(bounded.utf8), as: UTF8.self) == bounded)
            let parts = bounded.components(separatedBy: " [... ")
            #expect(parts.count == 2 && message.hasPrefix(parts[0]))
            let tail = parts[1].components(separatedBy: " ...] ")
            #expect(tail.count == 2 && message.hasSuffix(tail[1]))
            #expect(parts[0].utf8.count > 2040 && tail[1].utf8.count > 1016)
        }
    }
}
