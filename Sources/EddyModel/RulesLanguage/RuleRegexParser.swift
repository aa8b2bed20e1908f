// Parses a `matches()` pattern into a `RuleRegexNode` tree (JavaScript's syntax without the
// `u` flag, as Firebase's rules write it), refusing what `RuleRegex` cannot match in linear
// time (lookaround, backreferences) and anything malformed, with the reason and the position.
// Recursion is bounded by `RuleRegex.nestingMax` groups.

indirect enum RuleRegexNode: Sendable, Equatable {
    case empty
    case scalar(UInt32)
    case set(RuleRegex.ScalarSet)
    case any
    case start
    case end
    case wordBoundary(Bool)
    case concatenation([RuleRegexNode])
    case alternation([RuleRegexNode])
    /// `maximum` nil: unbounded.
    case repetition(RuleRegexNode, minimum: Int, maximum: Int?)
}

struct RuleRegexParser {
    /// The largest count a `{n,m}` quantifier may name.
    static let countMax = 1000

    private let pattern: [Unicode.Scalar]
    private var position = 0
    private var nesting = 0

    init(pattern: [Unicode.Scalar]) {
        self.pattern = pattern
    }

    mutating func parse() throws(RuleRegexError) -> RuleRegexNode {
        let node = try self.alternation()
        if self.position < self.pattern.count { throw self.error("unmatched )") }
        return node
    }

    private var peek: Unicode.Scalar? { self.position < self.pattern.count ? self.pattern[self.position] : nil }

    private func error(_ message: String) -> RuleRegexError {
        RuleRegexError("\(message) at position \(self.position + 1)")
    }

    private mutating func alternation() throws(RuleRegexError) -> RuleRegexNode {
        var branches = [try self.concatenation()]
        while self.peek == "|" {
            self.position += 1
            branches.append(try self.concatenation())
        }
        return branches.count == 1 ? branches[0] : .alternation(branches)
    }

    private mutating func concatenation() throws(RuleRegexError) -> RuleRegexNode {
        var items: [RuleRegexNode] = []
        while let c = self.peek, c != "|", c != ")" {
            items.append(try self.repeated())
        }
        switch items.count {
        case 0: return .empty
        case 1: return items[0]
        default: return .concatenation(items)
        }
    }

    private mutating func repeated() throws(RuleRegexError) -> RuleRegexNode {
        let atom = try self.atom()
        guard let (minimum, maximum) = try self.quantifier() else { return atom }
        switch atom {
        case .start, .end, .wordBoundary: throw self.error("nothing to repeat (an anchor cannot take a quantifier)")
        default: break
        }
        if self.peek == "?" { self.position += 1 }  // lazy: the same for a yes/no match
        if let c = self.peek, c == "*" || c == "+" || c == "?" || (c == "{" && self.quantifierAhead()) {
            throw self.error("nothing to repeat (two quantifiers in a row)")
        }
        return .repetition(atom, minimum: minimum, maximum: maximum)
    }

    /// A quantifier at the position, consumed: (minimum, maximum or nil for unbounded).
    private mutating func quantifier() throws(RuleRegexError) -> (Int, Int?)? {
        switch self.peek {
        case "*":
            self.position += 1
            return (0, nil)
        case "+":
            self.position += 1
            return (1, nil)
        case "?":
            self.position += 1
            return (0, 1)
        case "{":
            guard self.quantifierAhead() else { return nil }  // a literal `{`, as JavaScript reads it
            self.position += 1
            let minimum = try self.count()
            var maximum: Int? = minimum
            if self.peek == "," {
                self.position += 1
                maximum = self.peek == "}" ? nil : try self.count()
            }
            self.position += 1  // `}`
            if let maximum, maximum < minimum { throw self.error("numbers out of order in {\(minimum),\(maximum)}") }
            return (minimum, maximum)
        default:
            return nil
        }
    }

    /// Whether `{n}`, `{n,}` or `{n,m}` starts at the position.
    private func quantifierAhead() -> Bool {
        var i = self.position + 1
        func digits() -> Bool {
            let start = i
            while i < self.pattern.count, ("0"..."9").contains(self.pattern[i]) { i += 1 }
            return i > start
        }
        guard digits() else { return false }
        if i < self.pattern.count, self.pattern[i] == "," {
            i += 1
            _ = digits()
        }
        return i < self.pattern.count && self.pattern[i] == "}"
    }

    private mutating func count() throws(RuleRegexError) -> Int {
        var value = 0
        while let c = self.peek, ("0"..."9").contains(c) {
            value = value * 10 + Int(c.value - 0x30)
            if value > Self.countMax { throw self.error("a repetition count above \(Self.countMax)") }
            self.position += 1
        }
        return value
    }

    private mutating func atom() throws(RuleRegexError) -> RuleRegexNode {
        guard let c = self.peek else { throw self.error("unexpected end") }
        switch c {
        case "(":
            return try self.group()
        case "[":
            return .set(try self.set())
        case ".":
            self.position += 1
            return .any
        case "^":
            self.position += 1
            return .start
        case "$":
            self.position += 1
            return .end
        case "\\":
            return try self.escape()
        case "*", "+", "?":
            throw self.error("nothing to repeat before \(c)")
        case "{" where self.quantifierAhead():
            throw self.error("nothing to repeat before {")
        default:
            self.position += 1
            return .scalar(c.value)
        }
    }

    private mutating func group() throws(RuleRegexError) -> RuleRegexNode {
        let opening = self.position
        self.position += 1
        if self.peek == "?" {
            let next = self.position + 1 < self.pattern.count ? self.pattern[self.position + 1] : nil
            let after = self.position + 2 < self.pattern.count ? self.pattern[self.position + 2] : nil
            switch next {
            case ":":
                self.position += 2
            case "<" where after != "=" && after != "!":
                // A named group: the name is only for captures, which matches() has none of.
                guard let close = self.pattern[self.position...].firstIndex(of: ">") else { throw self.error("unterminated group name") }
                self.position = close + 1
            case "=", "!", "<":
                throw self.error("lookaround ((?=, (?!, (?<=, (?<!) is not supported")
            default:
                throw self.error("invalid group (?")
            }
        }
        self.nesting += 1
        defer { self.nesting -= 1 }
        guard self.nesting <= RuleRegex.nestingMax else { throw self.error("groups nested deeper than \(RuleRegex.nestingMax)") }
        let inner = try self.alternation()
        guard self.peek == ")" else {
            self.position = opening
            throw self.error("unterminated group")
        }
        self.position += 1
        return inner
    }

    /// An escape outside a set, at the `\`.
    private mutating func escape() throws(RuleRegexError) -> RuleRegexNode {
        self.position += 1
        guard let c = self.peek else { throw self.error("\\ at the end of the pattern") }
        switch c {
        case "d", "D", "w", "W", "s", "S":
            self.position += 1
            return .set(RuleRegex.ScalarSet(items: [Self.classEscape(c)]))
        case "b", "B":
            self.position += 1
            return .wordBoundary(c == "b")
        case "1"..."9":
            throw self.error("backreferences (\\\(c)) are not supported")
        case "k" where self.position + 1 < self.pattern.count && self.pattern[self.position + 1] == "<":
            throw self.error("backreferences (\\k<name>) are not supported")
        default:
            return .scalar(try self.characterEscape())
        }
    }

    static func classEscape(_ c: Unicode.Scalar) -> RuleRegex.ScalarSet.Item {
        switch c {
        case "d": return .digit(true)
        case "D": return .digit(false)
        case "w": return .word(true)
        case "W": return .word(false)
        case "s": return .space(true)
        default: return .space(false)
        }
    }

    /// The scalar a character escape stands for, at the character after the `\` (consumed).
    private mutating func characterEscape() throws(RuleRegexError) -> UInt32 {
        let c = self.pattern[self.position]
        self.position += 1
        switch c {
        case "n": return 0x0A
        case "r": return 0x0D
        case "t": return 0x09
        case "f": return 0x0C
        case "v": return 0x0B
        case "0":
            if let next = self.peek, ("0"..."9").contains(next) { throw self.error("octal escapes are not supported") }
            return 0
        case "c":
            guard let letter = self.peek, ("a"..."z").contains(letter) || ("A"..."Z").contains(letter) else {
                throw self.error("\\c must be followed by a letter")
            }
            self.position += 1
            return letter.value % 32
        case "x":
            if let value = self.hex(count: 2) { return value }
            return c.value  // `\x` without two hex digits is an `x`, as JavaScript reads it
        case "u":
            if self.peek == "{", let close = self.pattern[self.position...].firstIndex(of: "}") {
                let digits = String(String.UnicodeScalarView(self.pattern[(self.position + 1)..<close]))
                guard !digits.isEmpty, digits.count <= 6, let value = UInt32(digits, radix: 16), Unicode.Scalar(value) != nil else {
                    throw self.error("invalid \\u{...} escape")
                }
                self.position = close + 1
                return value
            }
            if let value = self.hex(count: 4) { return value }
            return c.value
        default:
            return c.value  // an identity escape: `\.`, `\/`, `\\`, `\$` ...
        }
    }

    /// `count` hex digits at the position, consumed; nil (nothing consumed) when there are not.
    private mutating func hex(count: Int) -> UInt32? {
        guard self.position + count <= self.pattern.count else { return nil }
        let digits = String(String.UnicodeScalarView(self.pattern[self.position..<(self.position + count)]))
        guard digits.allSatisfy(\.isHexDigit), let value = UInt32(digits, radix: 16) else { return nil }
        self.position += count
        return value
    }

    /// A set `[...]`, at the `[`.
    private mutating func set() throws(RuleRegexError) -> RuleRegex.ScalarSet {
        let opening = self.position
        self.position += 1
        var set = RuleRegex.ScalarSet()
        if self.peek == "^" {
            set.negated = true
            self.position += 1
        }
        while true {
            guard let c = self.peek else {
                self.position = opening
                throw self.error("unterminated character set")
            }
            if c == "]" {
                self.position += 1
                return set
            }
            let first = try self.setAtom()
            // A range `a-z`; a `-` first, last, or next to a class escape is itself.
            if self.peek == "-", self.position + 1 < self.pattern.count, self.pattern[self.position + 1] != "]" {
                self.position += 1
                let second = try self.setAtom()
                switch (first, second) {
                case (.range(let low, _), .range(let high, _)):
                    guard low <= high else { throw self.error("range out of order in character set") }
                    set.items.append(.range(low, high))
                default:
                    set.items.append(first)
                    set.items.append(.range(0x2D, 0x2D))
                    set.items.append(second)
                }
            } else {
                set.items.append(first)
            }
        }
    }

    /// One member of a set: a scalar (as a one-scalar range) or a class escape.
    private mutating func setAtom() throws(RuleRegexError) -> RuleRegex.ScalarSet.Item {
        let c = self.pattern[self.position]
        guard c == "\\" else {
            self.position += 1
            return .range(c.value, c.value)
        }
        self.position += 1
        guard let escaped = self.peek else { throw self.error("\\ at the end of the pattern") }
        switch escaped {
        case "d", "D", "w", "W", "s", "S":
            self.position += 1
            return Self.classEscape(escaped)
        case "b":
            self.position += 1
            return .range(0x08, 0x08)  // backspace, inside a set
        case "1"..."9":
            throw self.error("octal escapes are not supported")
        default:
            let value = try self.characterEscape()
            return .range(value, value)
        }
    }
}
