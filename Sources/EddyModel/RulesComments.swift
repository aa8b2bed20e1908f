// Firebase rules documents are JSON with comments: the console, the CLI's `database.rules.json`
// and the documentation's examples use `// line` and `/* block */` comments. `blanked` turns
// each comment into spaces (a newline stays a newline), outside JSON strings only, so the result
// is plain JSON whose every byte sits at the same line and column as in the text (errors keep
// pointing at the right place). An unterminated block comment is left as it is, for the JSON
// parser to refuse.
//
// Line breaks and tabs written raw inside a string become spaces too: Firebase's documentation
// prints long rule expressions across lines inside their JSON string, and Firebase's console and
// REST endpoint accept such documents (strict JSON refuses a raw control character). In a rule
// expression they are whitespace either way. Errors are located in the text before blanking
// (same bytes, same offsets), so a line break inside a string still counts as a line there.

public enum RulesComments {
    public static func blanked(_ text: [UInt8]) -> [UInt8] {
        let slash = UInt8(ascii: "/"), star = UInt8(ascii: "*"), quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
        let newline = UInt8(ascii: "\n"), space = UInt8(ascii: " ")
        let carriageReturn = UInt8(ascii: "\r"), tab = UInt8(ascii: "\t")
        guard text.contains(where: { $0 == slash || $0 == newline || $0 == carriageReturn || $0 == tab }) else { return text }
        var out = text
        var i = 0
        var inString = false
        while i < out.count {
            let byte = out[i]
            if inString {
                if byte == backslash {
                    i += 2
                    continue
                }
                if byte == quote { inString = false }
                if byte == newline || byte == carriageReturn || byte == tab { out[i] = space }
                i += 1
                continue
            }
            if byte == quote {
                inString = true
                i += 1
                continue
            }
            guard byte == slash, i + 1 < out.count else {
                i += 1
                continue
            }
            if out[i + 1] == slash {
                while i < out.count, out[i] != newline {
                    out[i] = space
                    i += 1
                }
            } else if out[i + 1] == star {
                var end = i + 2
                while end + 1 < out.count, !(out[end] == star && out[end + 1] == slash) { end += 1 }
                guard end + 1 < out.count else { return out }  // unterminated: the parser refuses it
                for j in i...(end + 1) where out[j] != newline { out[j] = space }
                i = end + 2
            } else {
                i += 1
            }
        }
        return out
    }
}
