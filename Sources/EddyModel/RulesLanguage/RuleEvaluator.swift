// Evaluates a rule expression as Firebase does. A rule holds only when its expression yields
// `true`; any error while evaluating (a method or `length` of null, an operator on the wrong
// types, a non-boolean result) makes the rule fail, never the request crash. A member of null is
// null, as on Firebase (recorded from a live database): `auth.uid` of a signed-out client is null,
// so `auth.uid === x || data.child('public').val() === true` still reaches its right side. Types are strict: `==` and
// `===` compare type and value, `&&`/`||`/`!`/`?:` need booleans, `+` adds numbers or joins
// strings, comparisons take two numbers or two strings.

public struct RuleContext: Sendable {
    /// `auth`: `.null` when unauthenticated, else a map (`uid`, `token`, ...).
    public var auth: RuleValue
    /// `now`: the server's time in milliseconds since the Unix epoch.
    public var now: Double
    /// The tree before the operation (`root`, `data`).
    public var tree: RuleTree
    /// The tree after a write (`newData`); the same as `tree` for reads.
    public var newTree: RuleTree
    /// `query`: the read's query parameters (a map), `.null` for writes.
    public var query: RuleValue
    /// The rule's location and its `$wildcard` captures.
    public var location: Path = Path(validatedKeys: [])
    public var wildcards: [String: String] = [:]

    public init(auth: RuleValue, now: Double, tree: RuleTree, newTree: RuleTree, query: RuleValue = .null) {
        self.auth = auth
        self.now = now
        self.tree = tree
        self.newTree = newTree
        self.query = query
    }
}

public struct RuleEvaluationError: Error, Sendable {
    public var message: String
}

public enum RuleEvaluator {
    /// Whether `expression` holds in `context` (errors count as false).
    public static func holds(_ expression: RuleExpression, _ context: RuleContext) -> Bool {
        (try? self.evaluate(expression, context)) == .bool(true)
    }

    public static func evaluate(_ expression: RuleExpression, _ context: RuleContext) throws(RuleEvaluationError) -> RuleValue {
        switch expression {
        case .literal(let value):
            return value
        case .regex:
            throw RuleEvaluationError(message: "a regular expression is only an argument of matches()")
        case .array(let elements):
            var values: [RuleValue] = []
            for element in elements { values.append(try self.evaluate(element, context)) }
            return .list(values)
        case .variable(let name):
            switch name {
            case "auth": return context.auth
            case "now": return .number(context.now)
            case "root": return .snapshot(RuleSnapshot(tree: context.tree, path: Path(validatedKeys: [])))
            case "data": return .snapshot(RuleSnapshot(tree: context.tree, path: context.location))
            case "newData": return .snapshot(RuleSnapshot(tree: context.newTree, path: context.location))
            case "query": return context.query
            default:
                guard let key = context.wildcards[name] else { throw RuleEvaluationError(message: "unknown variable \(name)") }
                return .string(key)
            }
        case .member(let base, let name):
            let value = try self.evaluate(base, context)
            switch value {
            case .map(let members): return members[name] ?? .null
            case .null where name != "length": return .null
            case .string(let s) where name == "length": return .number(Double(RuleStrings.length(s)))
            default: throw RuleEvaluationError(message: "\(value.typeName) has no member \(name)")
            }
        case .index(let base, let index):
            let value = try self.evaluate(base, context)
            if case .null = value { return .null }  // a member of null, as for `.name`
            guard case .map(let members) = value else { throw RuleEvaluationError(message: "only a map takes [\"name\"]") }
            switch try self.evaluate(index, context) {
            case .string(let key): return members[key] ?? .null
            // A JSON array (a token claim such as `firebase.identities["google.com"]`) is a map
            // keyed "0", "1", ...: `[0]` reads its first element, as in JavaScript.
            case .number(let n) where n >= 0 && n < 1e15 && n == n.rounded(.towardZero): return members[String(Int(n))] ?? .null
            default: throw RuleEvaluationError(message: "only a map takes [\"name\"] (or [n] for an array)")
            }
        case .call(let base, let name, let arguments):
            return try self.call(try self.evaluate(base, context), name, arguments, context)
        case .unary(let op, let operand):
            let value = try self.evaluate(operand, context)
            switch (op, value) {
            case ("!", .bool(let b)): return .bool(!b)
            case ("-", .number(let n)): return .number(-n)
            default: throw RuleEvaluationError(message: "\(op) does not apply to \(value.typeName)")
            }
        case .binary(let op, let left, let right):
            return try self.binary(op, left, right, context)
        case .conditional(let condition, let yes, let no):
            guard case .bool(let b) = try self.evaluate(condition, context) else {
                throw RuleEvaluationError(message: "the condition of ?: must be a boolean")
            }
            return try self.evaluate(b ? yes : no, context)
        }
    }

    private static func binary(_ op: String, _ left: RuleExpression, _ right: RuleExpression, _ context: RuleContext) throws(RuleEvaluationError)
        -> RuleValue
    {
        if op == "&&" || op == "||" {
            guard case .bool(let a) = try self.evaluate(left, context) else { throw RuleEvaluationError(message: "\(op) needs booleans") }
            if op == "&&" && !a { return .bool(false) }
            if op == "||" && a { return .bool(true) }
            guard case .bool(let b) = try self.evaluate(right, context) else { throw RuleEvaluationError(message: "\(op) needs booleans") }
            return .bool(b)
        }
        let a = try self.evaluate(left, context)
        let b = try self.evaluate(right, context)
        switch op {
        case "==", "===": return .bool(try self.equal(a, b))
        case "!=", "!==": return .bool(!(try self.equal(a, b)))
        case "<", "<=", ">", ">=":
            let c: Int
            switch (a, b) {
            case (.number(let x), .number(let y)):
                // NaN (0/0, 1/0 on Firebase) is neither less, equal nor greater.
                switch op {
                case "<": return .bool(x < y)
                case "<=": return .bool(x <= y)
                case ">": return .bool(x > y)
                default: return .bool(x >= y)
                }
            case (.string(let x), .string(let y)): c = RuleStrings.compare(x, y)
            default: throw RuleEvaluationError(message: "\(op) compares two numbers or two strings, not \(a.typeName) and \(b.typeName)")
            }
            switch op {
            case "<": return .bool(c < 0)
            case "<=": return .bool(c <= 0)
            case ">": return .bool(c > 0)
            default: return .bool(c >= 0)
            }
        case "+":
            switch (a, b) {
            case (.number(let x), .number(let y)): return .number(x + y)
            case (.string(let x), .string(let y)): return .string(try self.bounded(x + y, "+"))
            case (.string(let x), .number), (.string(let x), .bool): return .string(try self.bounded(x + self.text(b), "+"))
            case (.number, .string(let y)), (.bool, .string(let y)): return .string(try self.bounded(self.text(a) + y, "+"))
            default: throw RuleEvaluationError(message: "+ adds numbers or joins strings, not \(a.typeName) and \(b.typeName)")
            }
        case "-", "*", "/", "%":
            guard case .number(let x) = a, case .number(let y) = b else {
                throw RuleEvaluationError(message: "\(op) needs two numbers, not \(a.typeName) and \(b.typeName)")
            }
            switch op {
            case "-": return .number(x - y)
            case "*": return .number(x * y)
            // Firebase's division by zero gives NaN (recorded from a live database: `(1/0 +
            // '') == 'NaN'`), not JavaScript's Infinity.
            case "/": return .number(y == 0 ? .nan : x / y)
            default: return .number(x.truncatingRemainder(dividingBy: y))
            }
        default:
            throw RuleEvaluationError(message: "unknown operator \(op)")
        }
    }

    /// Strict equality: same type and value (snapshots and lists cannot be compared).
    private static func equal(_ a: RuleValue, _ b: RuleValue) throws(RuleEvaluationError) -> Bool {
        switch (a, b) {
        case (.snapshot, _), (_, .snapshot), (.list, _), (_, .list):
            throw RuleEvaluationError(message: "a \(a.typeName) cannot be compared with a \(b.typeName); use val()")
        case (.string(let x), .string(let y)):
            return RuleStrings.equal(x, y)
        default:
            return a == b
        }
    }

    private static func text(_ value: RuleValue) -> String {
        switch value {
        case .string(let s): return s
        case .number(let n) where n.isNaN: return "NaN"
        case .number(let n) where n.isInfinite: return n > 0 ? "Infinity" : "-Infinity"
        case .number(let n):
            var out: [UInt8] = []
            JSONWriter.writeNumber(n, into: &out)
            return String(decoding: out, as: UTF8.self)
        case .bool(let b): return b ? "true" : "false"
        default: return value.typeName
        }
    }

    // MARK: Methods

    /// A string an expression makes (`+`, `replace()`, case changes) is at most a stored
    /// string's `Limits.stringBytesMax`: a rule making a longer one fails (its access is
    /// denied), before memory runs out.
    private static func tooLong(_ what: String) -> RuleEvaluationError {
        RuleEvaluationError(message: "\(what) would make a string over \(Limits.stringBytesMax) bytes (stringBytesMax)")
    }

    private static func bounded(_ s: String, _ what: String) throws(RuleEvaluationError) -> String {
        guard s.utf8.count <= Limits.stringBytesMax else { throw Self.tooLong(what) }
        return s
    }

    private static func call(_ base: RuleValue, _ name: String, _ arguments: [RuleExpression], _ context: RuleContext) throws(RuleEvaluationError)
        -> RuleValue
    {
        var values: [RuleValue] = []
        for argument in arguments {
            if case .regex(let pattern, let flags) = argument, name == "matches" {
                values.append(.map(["pattern": .string(pattern), "flags": .string(flags)]))
            } else {
                values.append(try self.evaluate(argument, context))
            }
        }
        func string(_ i: Int) throws(RuleEvaluationError) -> String {
            guard i < values.count, case .string(let s) = values[i] else {
                throw RuleEvaluationError(message: "\(name)() takes a string as argument \(i + 1)")
            }
            return s
        }
        func count(_ n: Int) throws(RuleEvaluationError) {
            guard values.count == n else { throw RuleEvaluationError(message: "\(name)() takes \(n) argument(s), not \(values.count)") }
        }
        switch base {
        case .snapshot(let snapshot):
            switch name {
            case "val":
                try count(0)
                return RuleValue(try snapshot.value())
            case "child":
                try count(1)
                return .snapshot(RuleSnapshot(tree: snapshot.tree, path: snapshot.path.appending(try self.path(try string(0)))))
            case "parent":
                try count(0)
                guard let parent = snapshot.path.parent else { throw RuleEvaluationError(message: "the root has no parent()") }
                return .snapshot(RuleSnapshot(tree: snapshot.tree, path: parent))
            case "hasChild":
                try count(1)
                return .bool(!(try snapshot.tree.value(at: snapshot.path.appending(try self.path(try string(0))))).isNull)
            case "hasChildren":
                let value = try snapshot.value()
                guard case .object(let children) = value else { return .bool(false) }
                if values.isEmpty { return .bool(!children.isEmpty) }
                guard values.count == 1, case .list(let names) = values[0] else {
                    throw RuleEvaluationError(message: "hasChildren() takes nothing or a list of child names")
                }
                for name in names {
                    guard case .string(let key) = name else { throw RuleEvaluationError(message: "hasChildren() names children with strings") }
                    if value.child(at: try self.path(key)).isNull { return .bool(false) }
                }
                return .bool(true)
            case "exists":
                try count(0)
                return .bool(!(try snapshot.value()).isNull)
            case "getPriority":
                try count(0)
                return RuleValue(try snapshot.tree.priority(at: snapshot.path))
            case "isNumber", "isString", "isBoolean":
                try count(0)
                switch (name, try snapshot.value()) {
                case ("isNumber", .number), ("isString", .string), ("isBoolean", .bool): return .bool(true)
                default: return .bool(false)
                }
            default:
                throw RuleEvaluationError(message: "a snapshot has no method \(name)()")
            }
        case .string(let s):
            switch name {
            case "contains":
                try count(1)
                let needle = try string(0)
                return .bool(needle.isEmpty || RuleStrings.contains(s, needle))
            case "beginsWith":
                try count(1)
                return .bool(RuleStrings.hasPrefix(s, try string(0)))
            case "endsWith":
                try count(1)
                return .bool(RuleStrings.hasSuffix(s, try string(0)))
            case "replace":
                try count(2)
                let target = try string(0)
                let replacement = try string(1)
                guard !target.isEmpty else { return .string(s) }
                guard let replaced = RuleStrings.replacingAll(s, target, with: replacement, bytesMax: Limits.stringBytesMax) else {
                    throw Self.tooLong("replace()")
                }
                return .string(replaced)
            case "toLowerCase":
                try count(0)
                return .string(try self.bounded(s.lowercased(), "toLowerCase()"))
            case "toUpperCase":
                try count(0)
                return .string(try self.bounded(s.uppercased(), "toUpperCase()"))
            case "matches":
                try count(1)
                guard case .map(let regex) = values[0], case .string(let pattern)? = regex["pattern"], case .string(let flags)? = regex["flags"]
                else { throw RuleEvaluationError(message: "matches() takes a regular expression literal, /.../") }
                let compiled: RuleRegex
                do {
                    compiled = try RuleRegexCache.regex(pattern, flags: flags)
                } catch {
                    throw RuleEvaluationError(message: "invalid regular expression /\(pattern)/: \(error.message)")
                }
                guard let matched = compiled.matches(s, stepsMax: RuleRegex.ruleStepsMax) else {
                    throw RuleEvaluationError(
                        message: "matches(/\(pattern.prefix(64))/) gave up after \(RuleRegex.ruleStepsMax) steps over a string of \(s.utf8.count) bytes")
                }
                return .bool(matched)
            default:
                throw RuleEvaluationError(message: "a string has no method \(name)()")
            }
        default:
            throw RuleEvaluationError(message: "\(base.typeName) has no method \(name)()")
        }
    }

    private static func path(_ text: String) throws(RuleEvaluationError) -> Path {
        let keys = text.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard !keys.isEmpty else { throw RuleEvaluationError(message: "child() needs a path, not \"\(text)\"") }
        return Path(validatedKeys: keys)
    }
}
