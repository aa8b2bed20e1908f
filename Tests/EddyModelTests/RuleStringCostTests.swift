// The rules' string operations cost at most linear time and make strings no longer than a
// stored one: `contains()` and `replace()` search with Knuth-Morris-Pratt (a naive search of a
// 10,000-byte needle in a 1 MB value held a thread for minutes), and `replace()`, `+` and the
// case changes fail (the access is denied) when their result would pass `stringBytesMax`
// (chained replaces made gigabytes of a 100 KB write and ended the daemon).

import EddyModel
import EddyTesting
import Foundation
import Testing

@Suite struct RuleStringCostTests {
    func evaluate(_ text: String, value: String) throws(RuleEvaluationError) -> RuleValue {
        let context = RuleContext(auth: .null, now: 0, tree: RuleTree(.null), newTree: RuleTree(.string(value)))
        let expression: RuleExpression
        do {
            expression = try RuleExpression.parse(text, wildcards: [])
        } catch {
            Issue.record("\(text) does not parse: \(error)")
            return .null
        }
        return try RuleEvaluator.evaluate(expression, context)
    }

    /// contains() and replace() agree with a naive search on seeded random strings over a small
    /// alphabet (many partial matches, borders and overlaps).
    @Test func searchesAgreeWithANaiveSearch() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        print("RuleStringCostTests: EDDY_SEED=\(seed)")
        var random = SeededGenerator(seed: seed)
        func word(_ length: Int) -> String { String((0..<length).map { _ in "aab".randomElement(using: &random)! }) }
        for _ in 0..<2000 {
            let text = word(Int.random(in: 0...40, using: &random))
            let needle = word(Int.random(in: 1...6, using: &random))
            let expected = text.contains(needle)
            #expect(try self.evaluate("newData.val().contains('\(needle)')", value: text) == .bool(expected), "\(text) ∋ \(needle)")
            var naive = ""
            var rest = Substring(text)
            while let range = rest.range(of: needle) {
                naive += rest[..<range.lowerBound] + "X"
                rest = rest[range.upperBound...]
            }
            naive += rest
            #expect(try self.evaluate("newData.val().replace('\(needle)', 'X')", value: text) == .string(naive), "\(text) / \(needle)")
        }
        #expect(try self.evaluate("newData.val().contains('é')", value: "café") == .bool(true))
        #expect(try self.evaluate("newData.val().replace('é', 'e')", value: "café café") == .string("cafe cafe"))
    }

    /// The worst case of a naive search: a long needle that almost matches everywhere. It is
    /// answered (a naive search takes 10^10 steps here; this one about 2 x 10^6).
    @Test func aLongAlmostMatchingNeedleIsSearchedInLinearTime() throws {
        let text = String(repeating: "a", count: 1_000_000)
        let needle = String(repeating: "a", count: 10_000) + "b"
        #expect(try self.evaluate("newData.val().contains('\(needle)')", value: text) == .bool(false))
        #expect(try self.evaluate("newData.val().replace('\(needle)', '')", value: text) == .string(text))
        #expect(try self.evaluate("newData.val().contains('\(needle.dropLast())')", value: text) == .bool(true))
    }

    @Test func stringsLongerThanAStoredOneAreRefused() throws {
        let big = String(repeating: "a", count: 100_000)
        let thousand = String(repeating: "a", count: 1000)
        // Two replaces of each "a" by 1,000 would make 10^11 bytes; the first makes 10^8.
        do {
            let value = try self.evaluate("newData.val().replace('a', '\(thousand)').replace('a', '\(thousand)').length < 5", value: big)
            Issue.record("evaluated to \(value)")
        } catch {
            #expect(error.message.contains("replace() would make a string over \(Limits.stringBytesMax) bytes (stringBytesMax)"), "\(error)")
        }
        let nine = String(repeating: "a", count: 9 * 1024 * 1024)
        do {
            let value = try self.evaluate("(newData.val() + newData.val()).length > 0", value: nine)
            Issue.record("evaluated to \(value)")
        } catch {
            #expect(error.message.contains("+ would make a string over"), "\(error)")
        }
        // Up to the limit they are made.
        #expect(try self.evaluate("newData.val().replace('a', 'aa').length", value: big) == .number(200_000))
        #expect(try self.evaluate("(newData.val() + 'b').length", value: big) == .number(100_001))
        #expect(try self.evaluate("newData.val().toUpperCase().beginsWith('AAA')", value: big) == .bool(true))
    }

    /// matches() steps through at most `RuleRegex.ruleStepsMax` states: a large program over a
    /// long string fails (the access is denied) instead of holding a thread for minutes; the
    /// budget is counted in states, so a small budget shows it.
    @Test func matchesGivesUpPastItsStepBudget() throws {
        let regex = try RuleRegex("a{0,50}b", flags: "")
        let text = String(repeating: "a", count: 10_000)
        #expect(regex.matches(text, stepsMax: 1000) == nil)
        #expect(regex.matches(text + "b", stepsMax: .max) == true)
        #expect(regex.matches("aab", stepsMax: 1000) == true)
        // Within the rules' budget a simple pattern over a 1 MB value is answered.
        #expect(try self.evaluate("newData.val().matches(/^a+$/)", value: String(repeating: "a", count: 1_000_000)) == .bool(true))
    }
}
