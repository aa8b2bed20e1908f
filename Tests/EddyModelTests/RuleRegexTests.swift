// `matches()` patterns: the examples of Firebase's regex page, JavaScript's meaning where the
// page is silent, refusals of what needs backtracking or is malformed, patterns that take a
// backtracking engine exponential time, and a seeded comparison with Swift's own Regex (the
// engine rules used before, a backtracking one) on random patterns of the shared subset.

import EddyModel
import EddyTesting
import Testing

@Suite struct RuleRegexTests {
    func matches(_ pattern: String, _ string: String, flags: String = "") throws -> Bool {
        try RuleRegex(pattern, flags: flags).matches(string)
    }

    func refusal(_ pattern: String, _ flags: String = "") -> String? {
        do {
            _ = try RuleRegex(pattern, flags: flags)
            return nil
        } catch {
            return error.message
        }
    }

    // https://firebase.google.com/docs/database/security/regex, "Supported Features".
    @Test func firebasesExamples() throws {
        #expect(try self.matches("^foo", "foobar") && !self.matches("^foo", "afoo"))
        #expect(try self.matches("a", "ba") && !self.matches("^a", "ba"))
        #expect(try self.matches("a", "ab") && !self.matches("a$", "ab"))
        #expect(try self.matches("^a*$", "") && self.matches("^a*$", "aaa") && !self.matches("^a*$", "b"))
        #expect(try self.matches("^a+$", "a") && self.matches("^a+$", "aaa") && !self.matches("^a+$", ""))
        #expect(try self.matches("^a?$", "") && self.matches("^a?$", "a") && !self.matches("^a?$", "aa"))
        #expect(try self.matches("........", "Firebase") && !self.matches("........", "Firebas"))
        #expect(try self.matches("^(ab)*$", "abab") && !self.matches("^(ab)*$", "aba"))
        #expect(try self.matches("^(a|bc)$", "bc") && self.matches("^(a|bc)$", "a") && !self.matches("^(a|bc)$", "ac"))
        #expect(try self.matches("[ABCDEF]", "xDx") && !self.matches("[ABCDEF]", "xdx"))
        #expect(try self.matches("^[0-9A-F]+$", "09AF") && !self.matches("^[0-9A-F]+$", "09AG"))
        #expect(try self.matches("^[^0-9]+$", "abc") && !self.matches("^[^0-9]+$", "ab1"))
        #expect(try self.matches("\\s\\w\\d", " a1") && self.matches("^\\S\\W\\D$", "a-b") && !self.matches("^\\S\\W\\D$", "a-1"))
        #expect(try self.matches("^yes$", "YeS", flags: "i") && !self.matches("^yes$", "YeS"))
        // "Usage": a date, an email address (with {2,4} and i), a URL.
        let date = #"^(19|20)[0-9][0-9][-\/. ](0[1-9]|1[012])[-\/. ](0[1-9]|[12][0-9]|3[01])$"#
        #expect(try self.matches(date, "2024-02-29") && self.matches(date, "1999/12/31") && !self.matches(date, "2124-02-29"))
        let email = #"^[A-Z0-9._%+-]+@[A-Z0-9.-]+\.[A-Z]{2,4}$"#
        #expect(try self.matches(email, "ada.lovelace@example.org", flags: "i") && !self.matches(email, "ada@example.toolong", flags: "i"))
        #expect(try !self.matches(email, "ada@example.org"), "without i the set is uppercase only")
        let url = #"^(ht|f)tp(s?):\/\/[0-9a-zA-Z]([-.\w]*[0-9a-zA-Z])*((0-9)*)*(\/?)([a-zA-Z0-9\-\.\?\,\'\/\\\+&=%\$#_]*)?$"#
        #expect(try self.matches(url, "https://firebase.google.com/docs") && !self.matches(url, "gopher://x"))
    }

    @Test func javaScriptsMeaningWhereFirebaseIsSilent() throws {
        #expect(try !self.matches("^.$", "\n") && self.matches("^.$", "é") && self.matches("^.$", "😀"), ". is one scalar, not a line end")
        #expect(try !self.matches("a$", "a\n"), "$ is the end of the string only")
        #expect(try self.matches("\\bcat\\b", "a cat!") && !self.matches("\\bcat\\b", "concat"))
        #expect(try self.matches("^(?:ab)+$", "abab") && self.matches("^(?<pair>ab)+$", "abab"))
        #expect(try self.matches("^a+?$", "aaa") && self.matches("^a{2,}?$", "aaa"))
        #expect(try self.matches("^a{3}$", "aaa") && !self.matches("^a{3}$", "aaaa") && self.matches("^a{1,2}b$", "aab"))
        #expect(try self.matches("^x{,2}$", "x{,2}") && self.matches("^a{$", "a{") && self.matches("}", "}"), "{ not a quantifier is itself")
        #expect(try self.matches("^[a-]$", "-") && self.matches("^[\\d-z]+$", "1-z") && self.matches("^[\\]]$", "]"))
        #expect(try self.matches("^\\x41\\u0042\\u{1F600}\\t$", "AB😀\t") && self.matches("^\\.\\/\\$$", "./$"))
        #expect(try self.matches("^[^a]$", "b", flags: "i") && !self.matches("^[^a]$", "A", flags: "i"), "i folds before negating")
        #expect(try self.matches("^[a-z]+$", "AB", flags: "i"))
        #expect(try self.matches("^ÉTÉ$", "été", flags: "i"))
        #expect(try self.matches("^$", "") && self.matches("", "anything") && self.matches("a|", "b"))
        #expect(try !self.matches("[]", "a") && self.matches("^[^]$", "a"), "[] is empty, [^] is any")
    }

    @Test func refusedWithTheReason() {
        let cases: [(String, String)] = [
            ("(?=a)", "lookaround"), ("a(?!b)", "lookaround"), ("(?<=a)b", "lookaround"), ("(?<!a)b", "lookaround"),
            ("(a)\\1", "backreferences"), ("(?<x>a)\\k<x>", "backreferences"),
            ("a**", "two quantifiers"), ("*a", "nothing to repeat"), ("^*", "nothing to repeat"), ("a|+", "nothing to repeat"),
            ("(a", "unterminated group"), ("a)", "unmatched )"), ("[a", "unterminated character set"),
            ("[z-a]", "out of order"), ("a{3,2}", "out of order"), ("a{1001}", "above 1000"), ("(?x)", "invalid group"),
            ("\\", "end of the pattern"), ("\\cé", "\\c"), ("a\\08", "octal"),
            (String(repeating: "(", count: 70) + "a" + String(repeating: ")", count: 70), "nested deeper"),
            ("(a{1000}){1000}", "too large"),
        ]
        for (pattern, reason) in cases {
            let message = self.refusal(pattern)
            #expect(message?.contains(reason) == true, "/\(pattern)/: \(message ?? "accepted")")
        }
        #expect(self.refusal("a", "g")?.contains("only i") == true)
        #expect(self.refusal("(a{100}){99}") == nil)
    }

    /// Patterns on which a backtracking engine takes exponential time. Each answer must come
    /// (the test has no clock: the old engine would not have finished within the run).
    @Test func patternsThatBacktrackExponentiallyAnswerInLinearTime() throws {
        let many = String(repeating: "a", count: 5000)
        #expect(try !self.matches("^(a+)+$", many + "b"))
        #expect(try self.matches("^(a+)+$", many))
        #expect(try !self.matches("(a|aa)*c", many))
        #expect(try !self.matches("^(a|a?)+$", many + "!"))
        #expect(try !self.matches("^(.*)*x$", many))
        #expect(try !self.matches("^(\\w+\\s?)*$", String(repeating: "word ", count: 1000) + "!"))
        #expect(try self.matches("(x+x+)+y", String(repeating: "x", count: 3000) + "y"))
    }

    /// Random patterns of the subset both engines read alike, on random strings, against
    /// Swift's Regex with the options rules used (ASCII \d and \w, scalar semantics).
    @Test func agreesWithSwiftsRegexOnRandomPatterns() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        print("RuleRegexTests: EDDY_SEED=\(seed)")
        var g = SeededGenerator(seed: seed)
        let alphabet: [Character] = ["a", "b", "A", "B", "1", " ", "_", "-"]
        func atom(_ depth: Int) -> String {
            switch g.int(in: 0..<(depth >= 2 ? 6 : 8)) {  // at most two levels of groups
            case 0: return String(g.element(of: ["a", "b", "A", "1", "-", "_"]))
            case 1: return "."
            case 2: return g.element(of: ["\\d", "\\w", "\\s", "\\D", "\\W", "\\S"])
            case 3: return g.element(of: ["[ab]", "[^a]", "[a-b1]", "[^\\d ]", "[-a]", "[A-Z]"])
            case 4: return "a"
            case 5: return "b"
            case 6: return "(" + pattern(depth + 1) + ")"
            default: return "(?:" + pattern(depth + 1) + "|" + pattern(depth + 1) + ")"
            }
        }
        func piece(_ depth: Int) -> String {
            let base = atom(depth)
            // The oracle backtracks: an unbounded quantifier on a group (`(a*)*`) can take it
            // exponential time, so groups take bounded ones only (ours is linear either way,
            // and `patternsThatBacktrackExponentially...` covers such patterns).
            if base.hasPrefix("(") {
                switch g.int(in: 0..<5) {
                case 0: return base + "?"
                case 1: return base + "{\(g.int(in: 0...2))}"
                case 2: return base + "{0,2}"
                default: return base
                }
            }
            switch g.int(in: 0..<9) {
            case 0: return base + "*"
            case 1: return base + "+"
            case 2: return base + "?"
            case 3: return base + "{\(g.int(in: 0...2))}"
            case 4: return base + "{\(g.int(in: 0...1)),\(g.int(in: 1...3))}"
            case 5: return base + "*?"
            default: return base
            }
        }
        func pattern(_ depth: Int) -> String {
            (0..<g.int(in: 1...3)).map { _ in piece(depth) }.joined()
        }
        var compared = 0
        for round in 0..<300 {
            var text = pattern(0)
            if g.chance(1, in: 4) { text = "^" + text }
            if g.chance(1, in: 4) { text += "$" }
            let flags = g.chance(1, in: 4) ? "i" : ""
            let ours = try RuleRegex(text, flags: flags)
            var swift = try Regex(text).asciiOnlyDigits().asciiOnlyWordCharacters().matchingSemantics(.unicodeScalar)
            if flags == "i" { swift = swift.ignoresCase() }
            for _ in 0..<8 {
                let string = String((0..<g.int(in: 0...8)).map { _ in g.element(of: alphabet) })
                let expected = string.contains(swift)
                #expect(ours.matches(string) == expected, "round \(round): /\(text)/\(flags) on \"\(string)\" (EDDY_SEED=\(seed))")
                compared += 1
            }
        }
        #expect(compared == 2_400)
    }
}
