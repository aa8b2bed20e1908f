// The expression language of Firebase Realtime Database security rules (`.read`, `.write`,
// `.validate` strings): a JavaScript-like subset, parsed once when the rules are set.
//
//   expr    = cond
//   cond    = or ("?" expr ":" expr)?
//   or      = and ("||" and)*          and = equal ("&&" equal)*
//   equal   = rel (("==" | "===" | "!=" | "!==") rel)*
//   rel     = add (("<" | "<=" | ">" | ">=") add)*
//   add     = mul (("+" | "-") mul)*    mul = unary (("*" | "/" | "%") unary)*
//   unary   = ("!" | "-") unary | postfix
//   postfix = primary ("." name ("(" args ")")? | "[" expr "]" ("(" args ")")?)*
//             (a call after [...] needs a string literal there: `root["exists"]()`)
//   primary = number | 'string' | "string" | /regex/flags | true | false | null | name
//           | "(" expr ")" | "[" (expr ("," expr)*)? "]"
//
// Names are the rule variables (`auth`, `now`, `root`, `data`, `newData`, `query`, `$wildcard`);
// any other name is refused when parsed, as Firebase refuses unknown variables. Errors carry the
// column (1-based) in the expression. A tree deeper than `depthMax` (or parentheses nested
// deeper) is refused while it is parsed, so no rule can exhaust a stack; `||` and `&&` chains
// are built balanced (both are associative), so long lists of alternatives stay shallow.

public indirect enum RuleExpression: Sendable, Equatable {
    case literal(RuleValue)
    case variable(String)
    case member(RuleExpression, String)
    case index(RuleExpression, RuleExpression)
    case call(RuleExpression, String, [RuleExpression])
    case unary(String, RuleExpression)
    case binary(String, RuleExpression, RuleExpression)
    case conditional(RuleExpression, RuleExpression, RuleExpression)
    case regex(pattern: String, flags: String)
    case array([RuleExpression])

    /// The deepest expression tree a rule may hold (and the deepest nesting of parentheses,
    /// brackets, arguments, branches and prefix operators): bounds the recursion of parsing,
    /// type checking and evaluation, so no rule can exhaust a thread's stack. `||` and `&&`
    /// chains are built balanced, so they count log2 of their terms.
    public static let depthMax = 128

    /// The variables an expression may name besides `$wildcards`.
    public static let variables: Set<String> = ["auth", "now", "root", "data", "newData", "query"]

    /// Parses `text`; `wildcards` are the `$names` in scope at the rule's location.
    public static func parse(_ text: String, wildcards: Set<String>) throws(RuleSyntaxError) -> RuleExpression {
        var parser = RuleParser(text: text, wildcards: wildcards)
        return try parser.parseAll()
    }
}

/// A rule expression that does not parse: what is wrong and where (1-based column).
public struct RuleSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var column: Int

    public var description: String { "\(self.message) (column \(self.column))" }
}

struct RuleParser {
    enum Token: Equatable {
        case number(Double)
        case string(String)
        case regex(String, String)
        case name(String)
        case symbol(String)
        case end
    }

    private let chars: [Character]
    private let wildcards: Set<String>
    private var position = 0
    /// How deep the parser's recursion is (`nested`).
    private var nesting = 0
    private var token: Token = .end
    private var tokenStart = 0
    /// After a value a `/` divides; elsewhere it starts a regex literal.
    private var afterValue = false

    init(text: String, wildcards: Set<String>) {
        // One element per Unicode scalar, not per grapheme cluster: a string literal that starts
        // with a combining mark (`'\u{301}'`) must still start at its quote.
        self.chars = text.unicodeScalars.map(Character.init)
        self.wildcards = wildcards
    }

    mutating func parseAll() throws(RuleSyntaxError) -> RuleExpression {
        try self.advance()
        let expression = try self.conditional()
        guard self.token == .end else { throw self.error("unexpected \(self.describe(self.token))") }
        return expression.expression
    }

    // MARK: Grammar

    /// An expression and the depth of its tree (a leaf is 1).
    typealias Parsed = (expression: RuleExpression, depth: Int)

    /// `expression` with `depth`, refused when deeper than `RuleExpression.depthMax`, so
    /// nothing ever builds, walks or evaluates a deeper tree.
    private func node(_ expression: RuleExpression, depth: Int) throws(RuleSyntaxError) -> Parsed {
        guard depth <= RuleExpression.depthMax else { throw self.tooDeep() }
        return (expression, depth)
    }

    private func tooDeep() -> RuleSyntaxError {
        self.error(
            "the expression nests deeper than \(RuleExpression.depthMax) levels (operators, calls, parentheses); split it into simpler rules")
    }

    /// Entered for every parenthesis, bracket, argument, branch and prefix operator, so the
    /// parser's own recursion stays within `depthMax` whatever the tree it builds.
    private mutating func nested<T>(_ body: (inout RuleParser) throws(RuleSyntaxError) -> T) throws(RuleSyntaxError) -> T {
        self.nesting += 1
        defer { self.nesting -= 1 }
        guard self.nesting <= RuleExpression.depthMax else { throw self.tooDeep() }
        return try body(&self)
    }

    private mutating func conditional() throws(RuleSyntaxError) -> Parsed {
        try self.nested { parser throws(RuleSyntaxError) in
            let condition = try parser.binary(level: 0)
            guard parser.token == .symbol("?") else { return condition }
            try parser.advance()
            let yes = try parser.conditional()
            try parser.expect(":")
            let no = try parser.conditional()
            return try parser.node(
                .conditional(condition.expression, yes.expression, no.expression), depth: 1 + max(condition.depth, yes.depth, no.depth))
        }
    }

    private static let levels: [[String]] = [["||"], ["&&"], ["==", "===", "!=", "!=="], ["<", "<=", ">", ">="], ["+", "-"], ["*", "/", "%"]]

    private mutating func binary(level: Int) throws(RuleSyntaxError) -> Parsed {
        guard level < Self.levels.count else { return try self.unary() }
        var left = try self.binary(level: level + 1)
        if level <= 1 {
            // `||` and `&&` are associative (boolean operands, evaluated left to right until
            // one decides), so a chain is built balanced: a long list of alternatives
            // (`auth.uid == 'a' || auth.uid == 'b' || ...`) nests only log2(terms) deep.
            var operands = [left]
            while case .symbol(let op) = self.token, Self.levels[level].contains(op) {
                try self.advance()
                operands.append(try self.binary(level: level + 1))
            }
            return try self.balanced(operands[...], Self.levels[level][0])
        }
        while case .symbol(let op) = self.token, Self.levels[level].contains(op) {
            try self.advance()
            let right = try self.binary(level: level + 1)
            left = try self.node(.binary(op, left.expression, right.expression), depth: 1 + max(left.depth, right.depth))
        }
        return left
    }

    /// `operands` joined by `op`, the left half one more than the right when odd (so three
    /// terms read `(a op b) op c`, as a left-to-right chain does).
    private func balanced(_ operands: ArraySlice<Parsed>, _ op: String) throws(RuleSyntaxError) -> Parsed {
        if operands.count == 1 { return operands[operands.startIndex] }
        let middle = operands.startIndex + (operands.count + 1) / 2
        let left = try self.balanced(operands[..<middle], op)
        let right = try self.balanced(operands[middle...], op)
        return try self.node(.binary(op, left.expression, right.expression), depth: 1 + max(left.depth, right.depth))
    }

    private mutating func unary() throws(RuleSyntaxError) -> Parsed {
        if case .symbol(let op) = self.token, op == "!" || op == "-" {
            return try self.nested { parser throws(RuleSyntaxError) in
                try parser.advance()
                let operand = try parser.unary()
                return try parser.node(.unary(op, operand.expression), depth: 1 + operand.depth)
            }
        }
        return try self.postfix()
    }

    private mutating func postfix() throws(RuleSyntaxError) -> Parsed {
        var parsed = try self.primary()
        while true {
            switch self.token {
            case .symbol("."):
                try self.advance()
                guard case .name(let name) = self.token else { throw self.error("expected a name after \".\"") }
                try self.advance()
                if self.token == .symbol("(") {
                    let arguments = try self.arguments()
                    parsed = try self.node(
                        .call(parsed.expression, name, arguments.map(\.expression)),
                        depth: 1 + max(parsed.depth, arguments.map(\.depth).max() ?? 0))
                } else {
                    parsed = try self.node(.member(parsed.expression, name), depth: 1 + parsed.depth)
                }
            case .symbol("["):
                try self.advance()
                let index = try self.conditional()
                try self.expect("]")
                if self.token == .symbol("(") {
                    // `root["exists"]()`: a method named by a string literal, as JavaScript
                    // allows and Firebase accepts; a computed name is refused, as there.
                    guard case .literal(.string(let name)) = index.expression else {
                        throw self.error("a method is named by a string literal, as in [\"exists\"](), not computed")
                    }
                    let arguments = try self.arguments()
                    parsed = try self.node(
                        .call(parsed.expression, name, arguments.map(\.expression)),
                        depth: 1 + max(parsed.depth, arguments.map(\.depth).max() ?? 0))
                } else {
                    parsed = try self.node(.index(parsed.expression, index.expression), depth: 1 + max(parsed.depth, index.depth))
                }
            default:
                return parsed
            }
        }
    }

    /// `(` args `)`, at the `(`.
    private mutating func arguments() throws(RuleSyntaxError) -> [Parsed] {
        try self.list(closedBy: ")")
    }

    /// Comma-separated expressions up to `close`, at the opening bracket.
    private mutating func list(closedBy close: String) throws(RuleSyntaxError) -> [Parsed] {
        try self.advance()
        var elements: [Parsed] = []
        if self.token != .symbol(close) {
            elements.append(try self.conditional())
            while self.token == .symbol(",") {
                try self.advance()
                elements.append(try self.conditional())
            }
        }
        try self.expect(close)
        return elements
    }

    private mutating func primary() throws(RuleSyntaxError) -> Parsed {
        let token = self.token
        switch token {
        case .number(let n):
            try self.advance()
            return (.literal(.number(n)), 1)
        case .string(let s):
            try self.advance()
            return (.literal(.string(s)), 1)
        case .regex(let pattern, let flags):
            guard flags.allSatisfy({ $0 == "i" }) else { throw self.error("unsupported regular expression flags \(flags) (only i)") }
            do {
                _ = try RuleRegexCache.regex(pattern, flags: flags)
            } catch {
                throw self.error("invalid regular expression /\(pattern)/: \(error.message)")
            }
            try self.advance()
            return (.regex(pattern: pattern, flags: flags), 1)
        case .name("true"):
            try self.advance()
            return (.literal(.bool(true)), 1)
        case .name("false"):
            try self.advance()
            return (.literal(.bool(false)), 1)
        case .name("null"):
            try self.advance()
            return (.literal(.null), 1)
        case .name(let name):
            if name.hasPrefix("$") {
                guard self.wildcards.contains(name) else { throw self.error("unknown variable \(name): no such wildcard above this rule") }
            } else if !RuleExpression.variables.contains(name) {
                throw self.error("unknown variable \(name)")
            }
            try self.advance()
            return (.variable(name), 1)
        case .symbol("("):
            try self.advance()
            let inner = try self.conditional()
            try self.expect(")")
            return inner
        case .symbol("["):
            let elements = try self.list(closedBy: "]")
            return try self.node(.array(elements.map(\.expression)), depth: 1 + (elements.map(\.depth).max() ?? 0))
        default:
            throw self.error("expected a value, found \(self.describe(token))")
        }
    }

    private mutating func expect(_ symbol: String) throws(RuleSyntaxError) {
        guard self.token == .symbol(symbol) else { throw self.error("expected \"\(symbol)\", found \(self.describe(self.token))") }
        try self.advance()
    }

    private func describe(_ token: Token) -> String {
        switch token {
        case .number(let n): return "number \(n)"
        case .string: return "a string"
        case .regex: return "a regular expression"
        case .name(let n): return "\"\(n)\""
        case .symbol(let s): return "\"\(s)\""
        case .end: return "the end of the expression"
        }
    }

    private func error(_ message: String) -> RuleSyntaxError {
        RuleSyntaxError(message: message, column: self.tokenStart + 1)
    }

    // MARK: Tokens

    private static let symbols = ["===", "!==", "==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "+", "-", "*", "/", "%", "?", ":", ".", ",", "(", ")", "[", "]"]

    /// The scalar of the `\uXXXX` at `start` (a high surrogate followed by `\uXXXX` of a low one
    /// makes one scalar) and how many elements it takes; nil when malformed.
    private func unicodeEscape(at start: Int) -> (Unicode.Scalar, Int)? {
        func unit(at i: Int) -> UInt32? {
            guard i + 6 <= self.chars.count, self.chars[i] == "\\", self.chars[i + 1] == "u" else { return nil }
            let digits = self.chars[(i + 2)..<(i + 6)]
            guard digits.allSatisfy(\.isHexDigit) else { return nil }
            return UInt32(String(digits), radix: 16)
        }
        guard let first = unit(at: start) else { return nil }
        if (0xD800..<0xDC00).contains(first), let second = unit(at: start + 6), (0xDC00..<0xE000).contains(second) {
            return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)).map { ($0, 12) }
        }
        return Unicode.Scalar(first).map { ($0, 6) }
    }

    private mutating func advance() throws(RuleSyntaxError) {
        while self.position < self.chars.count, self.chars[self.position].isWhitespace { self.position += 1 }
        self.tokenStart = self.position
        guard self.position < self.chars.count else {
            self.token = .end
            return
        }
        let c = self.chars[self.position]
        if c.isNumber || (c == "." && self.position + 1 < self.chars.count && self.chars[self.position + 1].isNumber) {
            var end = self.position
            while end < self.chars.count, self.chars[end].isNumber || self.chars[end] == "." || self.chars[end] == "e" || self.chars[end] == "E"
                || ((self.chars[end] == "+" || self.chars[end] == "-") && end > 0 && (self.chars[end - 1] == "e" || self.chars[end - 1] == "E"))
            {
                end += 1
            }
            guard let n = Double(String(self.chars[self.position..<end])) else {
                throw RuleSyntaxError(message: "malformed number", column: self.position + 1)
            }
            self.position = end
            self.token = .number(n)
            self.afterValue = true
            return
        }
        if c == "'" || c == "\"" {
            var out = ""
            var i = self.position + 1
            while true {
                guard i < self.chars.count else { throw RuleSyntaxError(message: "unterminated string", column: self.position + 1) }
                let d = self.chars[i]
                if d == c { break }
                if d == "\\", i + 1 < self.chars.count {
                    let e = self.chars[i + 1]
                    switch e {
                    case "n": out.append("\n")
                    case "t": out.append("\t")
                    case "r": out.append("\r")
                    case "u":
                        // JavaScript's \uXXXX, a surrogate pair as two of them.
                        guard let (scalar, length) = self.unicodeEscape(at: i) else {
                            throw RuleSyntaxError(message: "malformed \\u escape (\\u and four hex digits)", column: i + 1)
                        }
                        out.unicodeScalars.append(scalar)
                        i += length
                        continue
                    default: out.append(e)
                    }
                    i += 2
                    continue
                }
                out.append(d)
                i += 1
            }
            self.position = i + 1
            self.token = .string(out)
            self.afterValue = true
            return
        }
        if c == "/" && !self.afterValue {
            var pattern = ""
            var i = self.position + 1
            var inClass = false
            while true {
                guard i < self.chars.count else { throw RuleSyntaxError(message: "unterminated regular expression", column: self.position + 1) }
                let d = self.chars[i]
                if d == "\\", i + 1 < self.chars.count {
                    pattern.append(d)
                    pattern.append(self.chars[i + 1])
                    i += 2
                    continue
                }
                if d == "[" { inClass = true }
                if d == "]" { inClass = false }
                if d == "/" && !inClass { break }
                pattern.append(d)
                i += 1
            }
            i += 1
            var flags = ""
            while i < self.chars.count, self.chars[i].isLetter {
                flags.append(self.chars[i])
                i += 1
            }
            self.position = i
            self.token = .regex(pattern, flags)
            self.afterValue = true
            return
        }
        if c.isLetter || c == "_" || c == "$" {
            var end = self.position + 1
            while end < self.chars.count, self.chars[end].isLetter || self.chars[end].isNumber || self.chars[end] == "_" || self.chars[end] == "$" {
                end += 1
            }
            let name = String(self.chars[self.position..<end])
            self.position = end
            self.token = .name(name)
            self.afterValue = true
            return
        }
        for symbol in Self.symbols {
            let s = Array(symbol)
            if self.position + s.count <= self.chars.count, Array(self.chars[self.position..<(self.position + s.count)]) == s {
                self.position += s.count
                self.token = .symbol(symbol)
                self.afterValue = symbol == ")" || symbol == "]"
                return
            }
        }
        throw RuleSyntaxError(message: "unexpected character \"\(c)\"", column: self.position + 1)
    }
}

extension RuleExpression {
    /// True when this expression or any expression inside it satisfies `predicate` (one walk
    /// over the tree for every structural question below).
    public func contains(where predicate: (RuleExpression) -> Bool) -> Bool {
        if predicate(self) { return true }
        switch self {
        case .literal, .regex, .variable: return false
        case .member(let base, _): return base.contains(where: predicate)
        case .index(let base, let index): return base.contains(where: predicate) || index.contains(where: predicate)
        case .call(let base, _, let arguments): return base.contains(where: predicate) || arguments.contains { $0.contains(where: predicate) }
        case .unary(_, let operand): return operand.contains(where: predicate)
        case .binary(_, let left, let right): return left.contains(where: predicate) || right.contains(where: predicate)
        case .conditional(let a, let b, let c): return a.contains(where: predicate) || b.contains(where: predicate) || c.contains(where: predicate)
        case .array(let elements): return elements.contains { $0.contains(where: predicate) }
        }
    }

    /// True when evaluating this may read the stored tree: it names `root` or `data`, or walks
    /// up with `parent()` (a `newData` parent is mostly stored data). Such rules must be checked
    /// where the write is applied (the committer); the others depend only on `auth`, `now`,
    /// `$wildcards`, `query` and the written values.
    public var readsTree: Bool {
        self.contains { expression in
            switch expression {
            case .variable(let name): return name == "root" || name == "data"
            case .call(_, let name, _): return name == "parent"
            default: return false
            }
        }
    }

    /// True when the expression names the variable `name` (a `$wildcard`, `query`, ...).
    public func mentions(_ name: String) -> Bool {
        self.contains { expression in
            if case .variable(let variable) = expression { return variable == name }
            return false
        }
    }
}
