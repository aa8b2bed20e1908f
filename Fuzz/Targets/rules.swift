// libFuzzer target: the rules document parser (`PUT /.settings/rules.json`) and the rules
// expression language. Invariants: no input traps; an accepted document's index declarations
// match paths, and its compiled .read/.write/.validate rules evaluate, without trapping; any
// text parses as an expression or is refused, and an accepted expression evaluates (to a value
// or an error) without trapping.

import EddyModel

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRules(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let probe = Path(validatedKeys: ["users", "u1", "posts"])
    let tree: Value = .object(["users": .object(["u1": .object(["posts": .object(["p": .string("x")])])])])
    let context = RuleContext(
        auth: .map(["uid": .string("u1"), "token": .map(["admin": .bool(true)])]), now: 1_700_000_000_000, tree: RuleTree(tree), newTree: RuleTree(.null),
        query: .map(["orderByChild": .string("owner"), "limitToFirst": .number(10)]))
    if let expression = try? RuleExpression.parse(String(decoding: bytes, as: UTF8.self), wildcards: ["$uid"]) {
        var scoped = context
        scoped.location = probe
        scoped.wildcards = ["$uid": "u1"]
        _ = try? RuleEvaluator.evaluate(expression, scoped)
    }
    guard let document = try? JSONParser.parse(bytes), let rules = try? Rules.parse(document) else { return 0 }
    for declaration in rules.indexes { _ = declaration.matches(probe) }
    if case .object(let top) = document, let body = top["rules"], let security = try? SecurityRules.compile(body) {
        _ = security.canRead(probe, context)
        _ = security.canWrite(probe, context)
    }
    return 0
}
