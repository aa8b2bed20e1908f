// The regular expressions of rules' `matches(/pattern/flags)`: Firebase's documented subset
// (literals, `.`, `\d \w \s \D \W \S`, `\` escapes, `^`, `$`, `*`, `+`, `?`, `{n}`, `{n,}`,
// `{n,m}`, groups, `|`, `[...]` sets, ranges and `[^...]`; the `i` flag), with JavaScript's
// meaning where Firebase's page is silent (`.` is any character but a line terminator, `$` is
// the end of the string only, `\b`, non-capturing and named groups, lazy quantifiers, which
// only test for a match and so mean the same as greedy ones).
//
// Matching runs a Thompson NFA over the string's Unicode scalars, every live state at once
// (a Pike VM without captures): time O(string length x program size) whatever the pattern,
// as with Firebase's engine ("neither greedy nor non-greedy"). A backtracking engine took
// seconds, then minutes, on `/^(a+)+$/` against a few dozen characters, inside the committer.
// What needs backtracking (lookaround, backreferences) is refused when the rules are set.
//
// Bounds: group nesting at most `nestingMax`, program at most `instructionsMax` (counted
// repetition copies its operand), each refused with the reason.

public struct RuleRegex: Sendable, Equatable {
    public static let nestingMax = 64
    public static let instructionsMax = 10_000

    /// A set of scalars: ranges and the class escapes, possibly negated.
    struct ScalarSet: Sendable, Equatable {
        enum Item: Sendable, Equatable {
            case range(UInt32, UInt32)
            case digit(Bool)  // \d (true) or \D
            case word(Bool)  // \w or \W
            case space(Bool)  // \s or \S
        }
        var items: [Item] = []
        var negated = false

        /// Whether `scalar` (or, ignoring case, one of its case forms) is in the set.
        func contains(_ scalar: UInt32, ignoringCase: Bool) -> Bool {
            // JavaScript compares case forms with the set's members, then negates.
            let listed = ignoringCase ? RuleRegex.caseVariants(scalar).contains { self.lists($0) } : self.lists(scalar)
            return listed != self.negated
        }

        private func lists(_ scalar: UInt32) -> Bool {
            for item in self.items {
                let found: Bool
                switch item {
                case .range(let low, let high): found = low <= scalar && scalar <= high
                case .digit(let positive): found = RuleRegex.isDigit(scalar) == positive
                case .word(let positive): found = RuleRegex.isWord(scalar) == positive
                case .space(let positive): found = RuleRegex.isSpace(scalar) == positive
                }
                if found { return true }
            }
            return false
        }
    }

    enum Instruction: Sendable, Equatable {
        case scalar(UInt32)
        case set(ScalarSet)
        case anyButLineTerminator
        case split(Int, Int)
        case jump(Int)
        case start  // ^
        case end  // $
        case wordBoundary(Bool)  // \b (true) or \B
        case match
    }

    let program: [Instruction]
    let ignoresCase: Bool

    /// Compiles `pattern` (the text between the slashes) with `flags` (only `i`).
    public init(_ pattern: String, flags: String) throws(RuleRegexError) {
        guard flags.allSatisfy({ $0 == "i" }) else { throw RuleRegexError("unsupported flags \(flags) (only i)") }
        self.ignoresCase = flags.contains("i")
        var parser = RuleRegexParser(pattern: Array(pattern.unicodeScalars))
        let tree = try parser.parse()
        var compiler = RuleRegexCompiler(ignoresCase: self.ignoresCase)
        try compiler.emit(tree)
        try compiler.finish()
        self.program = compiler.program
    }

    /// True when the pattern matches somewhere in `string` (JavaScript's `test`). Reads the
    /// string's scalars once, in order, holding one scalar of lookahead.
    public func matches(_ string: String) -> Bool {
        self.matches(string, stepsMax: .max)!
    }

    /// How many states a rule's `matches()` may step through in all: linear is not cheap when
    /// both factors are large (a 10,000-step program over a 10 MiB string is 10^11 steps, minutes
    /// of a thread every request shares). A simple pattern over a 10 MiB string takes a few
    /// times 10^7.
    public static let ruleStepsMax = 200_000_000

    /// As `matches(_:)`, or nil once more than `stepsMax` states were stepped through.
    public func matches(_ string: String, stepsMax: Int) -> Bool? {
        var steps = 0
        let count = self.program.count
        var current = StateList(capacity: count)
        var next = StateList(capacity: count)
        var stack: [Int] = []
        var scalars = string.unicodeScalars.makeIterator()
        var place = Place(previous: nil, next: scalars.next()?.value)
        // A pattern that starts with `^` can only start a match at the string's start.
        let anchored = self.program.first == .start
        while true {
            // Unanchored: a match may start at every position.
            if !anchored || place.previous == nil, self.follow(0, place, into: &current, stack: &stack) { return true }
            guard let scalar = place.next else { return false }
            place = Place(previous: scalar, next: scalars.next()?.value)
            next.clear()
            steps += current.states.count
            if steps > stepsMax { return nil }
            for pc in current.states {
                let consumed: Bool
                switch self.program[pc] {
                case .scalar(let expected): consumed = self.equal(scalar, expected)
                case .set(let set): consumed = set.contains(scalar, ignoringCase: self.ignoresCase)
                case .anyButLineTerminator: consumed = !RuleRegex.isLineTerminator(scalar)
                default: consumed = false
                }
                if consumed, self.follow(pc + 1, place, into: &next, stack: &stack) { return true }
            }
            swap(&current, &next)
            if anchored, current.states.isEmpty { return false }
        }
    }

    /// A position in the string: the scalars either side of it (nil at the start, at the end).
    struct Place {
        var previous: UInt32?
        var next: UInt32?
    }

    /// Adds `pc` and every state reachable from it without consuming input (at `place`) to
    /// `list`; true when one of them is `match`.
    private func follow(_ pc: Int, _ place: Place, into list: inout StateList, stack: inout [Int]) -> Bool {
        stack.removeAll(keepingCapacity: true)
        stack.append(pc)
        while let pc = stack.popLast() {
            guard list.insert(pc) else { continue }
            switch self.program[pc] {
            case .match: return true
            case .jump(let target): stack.append(target)
            case .split(let first, let second):
                stack.append(second)
                stack.append(first)
            case .start: if place.previous == nil { stack.append(pc + 1) }
            case .end: if place.next == nil { stack.append(pc + 1) }
            case .wordBoundary(let at):
                let before = place.previous.map(RuleRegex.isWord) ?? false
                let after = place.next.map(RuleRegex.isWord) ?? false
                if (before != after) == at { stack.append(pc + 1) }
            case .scalar, .set, .anyButLineTerminator: break
            }
        }
        return false
    }

    private func equal(_ scalar: UInt32, _ expected: UInt32) -> Bool {
        if scalar == expected { return true }
        return self.ignoresCase && RuleRegex.caseVariants(scalar).contains(expected)
    }

    /// A sparse set of program counters, cleared in O(1) (Russ Cox's `sparse` set).
    struct StateList {
        private(set) var states: [Int] = []
        private var index: [Int]

        init(capacity: Int) {
            self.index = Array(repeating: 0, count: capacity)
            self.states.reserveCapacity(capacity)
        }

        mutating func insert(_ pc: Int) -> Bool {
            let slot = self.index[pc]
            if slot < self.states.count, self.states[slot] == pc { return false }
            self.index[pc] = self.states.count
            self.states.append(pc)
            return true
        }

        mutating func clear() { self.states.removeAll(keepingCapacity: true) }
    }

    // MARK: Character classes (JavaScript's)

    static func isDigit(_ s: UInt32) -> Bool { s >= 0x30 && s <= 0x39 }

    static func isWord(_ s: UInt32) -> Bool {
        (s >= 0x30 && s <= 0x39) || (s >= 0x41 && s <= 0x5A) || (s >= 0x61 && s <= 0x7A) || s == 0x5F
    }

    static func isSpace(_ s: UInt32) -> Bool {
        switch s {
        case 0x09...0x0D, 0x20, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF: return true
        default: return false
        }
    }

    static func isLineTerminator(_ s: UInt32) -> Bool { s == 0x0A || s == 0x0D || s == 0x2028 || s == 0x2029 }

    /// `s` and its simple lower- and uppercase forms (one scalar each), for the `i` flag.
    static func caseVariants(_ s: UInt32) -> [UInt32] {
        if s < 0x80 {
            if s >= 0x41 && s <= 0x5A { return [s, s + 0x20] }
            if s >= 0x61 && s <= 0x7A { return [s, s - 0x20] }
            return [s]
        }
        guard let scalar = Unicode.Scalar(s) else { return [s] }
        var out = [s]
        for mapping in [scalar.properties.lowercaseMapping, scalar.properties.uppercaseMapping] {
            let scalars = mapping.unicodeScalars
            if scalars.count == 1, let only = scalars.first, only.value != s { out.append(only.value) }
        }
        return out
    }
}

/// A pattern `matches()` cannot use: what is wrong with it.
public struct RuleRegexError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    init(_ message: String) { self.message = message }
    public var description: String { self.message }
}
