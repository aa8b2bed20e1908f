// What Firebase refuses when a rules document is deployed, beyond syntax: a method no type has
// (`auth.uid.startsWith('a')`, `newData.isStrng()`), `newData` in a `.read` rule ("`.read`
// rules can access all ... variables except `newData`") and type errors (RuleTypeCheck: a rule
// that is not a boolean, `!` of a number, a snapshot compared with null, `val().name`). Such rules parse, but evaluate to an
// error every time, so they would deny silently. Checked when a document is set
// (`Engine.setRules`), not when one is loaded: a document stored by an older version still
// compiles, and its faulty rules deny as they did.

public enum RulesDeployCheck {
    /// The methods of snapshots and strings (RuleEvaluator); anything else is a typo.
    public static let methods: Set<String> = [
        "val", "child", "parent", "hasChild", "hasChildren", "exists", "getPriority", "isNumber", "isString", "isBoolean",
        "contains", "beginsWith", "endsWith", "replace", "toLowerCase", "toUpperCase", "matches",
    ]

    /// Throws the first faulty rule of the rules object `rules` (the value of "rules"), naming its
    /// location, rule and the column of the fault.
    public static func check(_ rules: Value) throws(SecurityRules.CompileError) {
        try self.walk(rules, location: "", wildcards: [])
    }

    private static func walk(_ value: Value, location: String, wildcards: Set<String>) throws(SecurityRules.CompileError) {
        guard case .object(let members) = value else { return }
        for name in [".read", ".write", ".validate"] {
            guard case .string(let text)? = members[name] else { continue }
            func fault(_ message: String, at word: String) -> SecurityRules.CompileError {
                // The column (in Unicode scalars, as the parser counts) where `word` first appears.
                let scalars = Array(text.unicodeScalars)
                let needle = Array(word.unicodeScalars)
                let offset = needle.isEmpty || scalars.count < needle.count
                    ? 0 : (0...(scalars.count - needle.count)).first { scalars[$0..<($0 + needle.count)].elementsEqual(needle) } ?? 0
                return SecurityRules.CompileError(
                    location: location.isEmpty ? "/" : location, rule: name, expression: text,
                    error: RuleSyntaxError(message: message, column: offset + 1))
            }
            let expression: RuleExpression
            do {
                expression = try RuleExpression.parse(text, wildcards: wildcards)
            } catch {
                throw SecurityRules.CompileError(location: location.isEmpty ? "/" : location, rule: name, expression: text, error: error)
            }
            var unknown: String?
            _ = expression.contains { node in
                if case .call(_, let method, _) = node, !Self.methods.contains(method) { unknown = method }
                return unknown != nil
            }
            if let unknown {
                throw fault("unknown method \(unknown)(); known: \(Self.methods.sorted().joined(separator: ", "))", at: "." + unknown)
            }
            if name == ".read", expression.mentions("newData") {
                throw fault("newData is not available in .read rules (only in .write and .validate)", at: "newData")
            }
            do throws(RuleTypeCheck.Fault) {
                try RuleTypeCheck.checkRule(expression)
            } catch {
                throw fault(error.message, at: error.near)
            }
        }
        for (key, child) in members where !key.hasPrefix(".") {
            try self.walk(child, location: location + "/" + key, wildcards: key.hasPrefix("$") ? wildcards.union([key]) : wildcards)
        }
    }
}
