// Where in a refused rules document the problem is, as line and column (1-based), so an
// operator editing a long rules file can go straight to it: for an expression that does not
// compile, the position of the failing character inside its string; for a JSON syntax error,
// the byte the parser stopped at. Other refusals (an unknown member, a bad .indexOn) already name
// their rules path and keep their message.

import Foundation
import EddyModel

enum RulesDocumentPosition {
    /// `error` with "line L, column C" added where the position can be found in `text`.
    /// `text` is the document as parsed (`RulesComments.blanked`), `original` as sent: the same
    /// bytes at the same offsets, but line breaks inside strings are still line breaks there.
    static func locate(_ error: EddyError, in text: [UInt8], original: [UInt8]) -> EddyError {
        if let compile = error.underlying as? SecurityRules.CompileError {
            var literal: [UInt8] = []
            JSONWriter.writeString(compile.expression, into: &literal)
            guard let start = self.firstOffset(of: literal, in: text) else { return error }
            // Inside the string: the opening quote, then the characters before the column
            // (escapes would shift it; the expression's own text is plain in practice).
            let prefix = Array(String(compile.expression.prefix(max(0, compile.error.column - 1))).utf8)
            var escaped: [UInt8] = []
            JSONWriter.writeString(String(decoding: prefix, as: UTF8.self), into: &escaped)
            let offset = start + 1 + max(0, escaped.count - 2)
            let (line, column) = self.lineAndColumn(of: offset, in: original)
            return EddyError(error.code, "line \(line), column \(column): \(error.message)", underlying: compile)
        }
        if error.code == .invalidJSON, let range = error.message.range(of: "at byte "),
            let byte = Int(error.message[range.upperBound...].prefix(while: { $0.isNumber }))
        {
            let (line, column) = self.lineAndColumn(of: min(byte, original.count), in: original)
            return EddyError(error.code, "line \(line), column \(column): \(error.message)")
        }
        return error
    }

    static func lineAndColumn(of offset: Int, in text: [UInt8]) -> (line: Int, column: Int) {
        var line = 1
        var lineStart = 0
        for i in 0..<min(offset, text.count) where text[i] == UInt8(ascii: "\n") {
            line += 1
            lineStart = i + 1
        }
        // Columns count characters, not bytes.
        let column = String(decoding: text[lineStart..<min(offset, text.count)], as: UTF8.self).count + 1
        return (line, column)
    }

    private static func firstOffset(of needle: [UInt8], in text: [UInt8]) -> Int? {
        guard !needle.isEmpty, needle.count <= text.count else { return nil }
        for start in 0...(text.count - needle.count) where text[start] == needle[0] {
            if text[start..<(start + needle.count)].elementsEqual(needle) { return start }
        }
        return nil
    }
}
