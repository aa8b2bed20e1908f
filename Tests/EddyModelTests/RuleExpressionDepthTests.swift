// Rule expressions nest at most `RuleExpression.depthMax` deep: deeper ones are refused when
// parsed (and so when a rules document is deployed) with an error naming the limit, instead of
// exhausting a thread's stack while parsing, checking or evaluating. `||` and `&&` chains are
// built balanced, so thousands of alternatives stay shallow and evaluate as a left-to-right
// chain does.

import EddyModel
import EddyTesting
import Testing

@Suite struct RuleExpressionDepthTests {
    let context = RuleContext(auth: .map(["uid": .string("u4321")]), now: 0, tree: RuleTree(.null), newTree: RuleTree(.null))

    func refusedAsTooDeep(_ text: String, _ what: String) {
        do {
            _ = try RuleExpression.parse(text, wildcards: [])
            Issue.record("\(what): parsed")
        } catch {
            #expect(error.message.contains("nests deeper than \(RuleExpression.depthMax) levels"), "\(what): \(error)")
        }
    }

    @Test func deepNestingOfEveryKindIsRefused() {
        let n = 3000
        self.refusedAsTooDeep(String(repeating: "(", count: n) + "true" + String(repeating: ")", count: n), "parentheses")
        self.refusedAsTooDeep(String(repeating: "!", count: n) + "true", "prefix operators")
        self.refusedAsTooDeep(String(repeating: "-", count: n) + "1 > 0", "negations")
        self.refusedAsTooDeep(Array(repeating: "1", count: n).joined(separator: " + ") + " > 0", "a chain of +")
        self.refusedAsTooDeep(Array(repeating: "1", count: n).joined(separator: " == ") , "a chain of ==")
        self.refusedAsTooDeep("data" + String(repeating: ".parent()", count: n) + ".exists()", "a chain of calls")
        self.refusedAsTooDeep("data" + String(repeating: ".child('a')", count: 200) + ".exists()", "calls just past the limit")
        self.refusedAsTooDeep(String(repeating: "[", count: n) + String(repeating: "]", count: n) + " == null", "arrays")
        self.refusedAsTooDeep(String(repeating: "true ? ", count: n) + "true" + String(repeating: " : false", count: n), "conditionals")
        self.refusedAsTooDeep("auth.uid.contains(" + String(repeating: "(", count: n) + "'a'" + String(repeating: ")", count: n) + ")", "an argument")
    }

    @Test func nestingWithinTheLimitParsesAndEvaluates() throws {
        let limit = RuleExpression.depthMax
        let parens = String(repeating: "(", count: limit - 1) + "true" + String(repeating: ")", count: limit - 1)
        #expect(try RuleEvaluator.evaluate(RuleExpression.parse(parens, wildcards: []), self.context) == .bool(true))
        let nots = String(repeating: "!", count: limit - 2) + "true"
        #expect(try RuleEvaluator.evaluate(RuleExpression.parse(nots, wildcards: []), self.context) == .bool(true))
        let sum = Array(repeating: "1", count: limit - 2).joined(separator: " + ") + " == \(limit - 2)"
        #expect(try RuleEvaluator.evaluate(RuleExpression.parse(sum, wildcards: []), self.context) == .bool(true))
    }

    @Test func longChainsOfAlternativesStayShallowAndEvaluateInOrder() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        print("RuleExpressionDepthTests: EDDY_SEED=\(seed)")
        var random = SeededGenerator(seed: seed)
        let terms = 5000
        let alternatives = (0..<terms).map { "auth.uid == 'u\($0)'" }.joined(separator: " || ")
        let or = try RuleExpression.parse(alternatives, wildcards: [])
        #expect(try RuleEvaluator.evaluate(or, self.context) == .bool(true), "u4321 is one of them")
        let nobody = RuleContext(auth: .map(["uid": .string("nobody")]), now: 0, tree: RuleTree(.null), newTree: RuleTree(.null))
        #expect(try RuleEvaluator.evaluate(or, nobody) == .bool(false))
        // A chain of && with one false at a random place; evaluation stops there, before a
        // term that would fail (a non-boolean), as a left-to-right chain would.
        for _ in 0..<20 {
            let count = Int.random(in: 2...3000, using: &random)
            let falseAt = Int.random(in: 0..<count, using: &random)
            var parts = (0..<count).map { $0 == falseAt ? "false" : "true" }
            parts.append("1")  // never reached: && of a number is an evaluation error
            let and = try RuleExpression.parse(parts.joined(separator: " && "), wildcards: [])
            #expect(try RuleEvaluator.evaluate(and, self.context) == .bool(false), "count \(count), false at \(falseAt), seed \(seed)")
        }
        let allTrue = try RuleExpression.parse(Array(repeating: "true", count: 3000).joined(separator: " && ") + " && 1", wildcards: [])
        #expect(throws: RuleEvaluationError.self) { try RuleEvaluator.evaluate(allTrue, self.context) }
    }

    @Test func threeTermsReadAsALeftToRightChain() throws {
        let parsed = try RuleExpression.parse("true || false || auth != null", wildcards: [])
        let left: RuleExpression = .binary("||", .literal(.bool(true)), .literal(.bool(false)))
        #expect(parsed == .binary("||", left, .binary("!=", .variable("auth"), .literal(.null))))
    }

    @Test func aDeployedDocumentWithADeepRuleIsRefusedNamingTheRule() throws {
        let deep = String(repeating: "(", count: 800) + "true" + String(repeating: ")", count: 800)
        let document = Value.object(["a": .object([".read": .string(deep)])])
        do {
            try RulesDeployCheck.check(document)
            Issue.record("deployed")
        } catch {
            #expect(error.location == "/a" && error.rule == ".read", "\(error)")
            #expect(error.error.message.contains("nests deeper than"), "\(error)")
        }
        #expect(throws: SecurityRules.CompileError.self) { try SecurityRules.compile(document) }
    }
}
