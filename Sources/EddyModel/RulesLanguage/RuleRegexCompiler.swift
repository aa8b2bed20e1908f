// Turns a `RuleRegexNode` tree into `RuleRegex`'s program (Thompson's construction): a `split`
// for each choice, a `jump` back for each unbounded repetition, `{n,m}` as n copies and m - n
// optional ones. Refuses a program longer than `RuleRegex.instructionsMax`.

struct RuleRegexCompiler {
    let ignoresCase: Bool
    private(set) var program: [RuleRegex.Instruction] = []

    init(ignoresCase: Bool) {
        self.ignoresCase = ignoresCase
    }

    mutating func emit(_ node: RuleRegexNode) throws(RuleRegexError) {
        switch node {
        case .empty:
            break
        case .scalar(let value):
            try self.append(.scalar(value))
        case .set(let set):
            try self.append(.set(set))
        case .any:
            try self.append(.anyButLineTerminator)
        case .start:
            try self.append(.start)
        case .end:
            try self.append(.end)
        case .wordBoundary(let at):
            try self.append(.wordBoundary(at))
        case .concatenation(let items):
            for item in items { try self.emit(item) }
        case .alternation(let branches):
            var exits: [Int] = []
            for (n, branch) in branches.enumerated() {
                guard n < branches.count - 1 else {
                    try self.emit(branch)
                    break
                }
                let split = self.program.count
                try self.append(.split(split + 1, -1))
                try self.emit(branch)
                exits.append(self.program.count)
                try self.append(.jump(-1))
                self.program[split] = .split(split + 1, self.program.count)
            }
            for exit in exits { self.program[exit] = .jump(self.program.count) }
        case .repetition(let operand, let minimum, let maximum):
            for _ in 0..<minimum { try self.emit(operand) }
            guard let maximum else {
                let loop = self.program.count
                try self.append(.split(loop + 1, -1))
                try self.emit(operand)
                try self.append(.jump(loop))
                self.program[loop] = .split(loop + 1, self.program.count)
                return
            }
            for _ in minimum..<maximum {
                let split = self.program.count
                try self.append(.split(split + 1, -1))
                try self.emit(operand)
                self.program[split] = .split(split + 1, self.program.count)
            }
        }
    }

    /// Ends the program with its `match`.
    mutating func finish() throws(RuleRegexError) {
        try self.append(.match)
    }

    private mutating func append(_ instruction: RuleRegex.Instruction) throws(RuleRegexError) {
        guard self.program.count < RuleRegex.instructionsMax else {
            throw RuleRegexError("the pattern is too large (over \(RuleRegex.instructionsMax) steps once its {n,m} repetitions are written out)")
        }
        self.program.append(instruction)
    }
}
