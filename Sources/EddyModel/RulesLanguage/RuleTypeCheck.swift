// The types of a rule expression, checked when a rules document is deployed, as Firebase checks
// them: a rule must be a boolean (`".read": "7"` is refused), `!` takes a boolean ("! only
// operates on booleans."), snapshots are not values (`data.child('x') != null` is refused: use
// `exists()` or `val()`), `val()` gives a primitive whose only member is a string's `length`
// (`data.val().public` is refused: use `child('public').val()`), methods take the arguments
// their reference lists, and `query` has only its documented members.
//
// Invariant: only what is wrong for every data, token and query is refused. A type that depends
// on them (`auth`'s members, a JSON token claim, `val()` of data that may be a string or a
// boolean) is `unknown` or `primitive` and passes, except where Firebase's own checker refuses it
// (`!` of a `val()`). A rule that passes may still fail at run time (a method of null); that
// denies, as on Firebase.

public enum RuleTypeCheck {
    /// What an expression can evaluate to, as far as the rule alone tells.
    public enum RuleType: Equatable, Sendable, CustomStringConvertible {
        case boolean, number, string, null, snapshot, list, regex
        /// `query`: a map of Firebase's query members.
        case query
        /// `auth`: null when signed out, else a map of the token's fields; never a boolean,
        /// number or string itself.
        case auth
        /// `val()`, `getPriority()`: a string, number, boolean or null, known only at run time.
        case primitive
        /// `auth`, its members and anything else the rule alone does not tell.
        case unknown
        /// The two branches of `?:` have different types.
        case mixed

        public var description: String {
            switch self {
            case .boolean: return "a boolean"
            case .number: return "a number"
            case .string: return "a string"
            case .null: return "null"
            case .snapshot: return "a snapshot (RuleDataSnapshot)"
            case .list: return "a list"
            case .regex: return "a regular expression"
            case .query: return "the query object"
            case .auth: return "auth (null or the token's fields: compare it with null, or use auth.uid, auth.token...)"
            case .primitive: return "a primitive value"
            case .unknown: return "a value"
            case .mixed: return "a number, string or boolean depending on the condition"
            }
        }

        /// Could be a boolean at run time.
        var mayBeBoolean: Bool { self == .boolean || self == .unknown || self == .primitive }
    }

    /// A type error: its message and the text (a word of the rule) nearest to it, for the column.
    public struct Fault: Error, Sendable, Equatable {
        public var message: String
        public var near: String
    }

    /// The members of `query` (Engine.ruleQuery).
    public static let queryMembers: [String: RuleType] = [
        "orderByKey": .boolean, "orderByValue": .boolean, "orderByPriority": .boolean, "orderByChild": .unknown,
        "startAt": .unknown, "startAfter": .unknown, "endAt": .unknown, "endBefore": .unknown, "equalTo": .unknown,
        "limitToFirst": .unknown, "limitToLast": .unknown,
    ]

    static let snapshotMethods: Set<String> = [
        "val", "child", "parent", "hasChild", "hasChildren", "exists", "getPriority", "isNumber", "isString", "isBoolean",
    ]
    static let stringMethods: Set<String> = ["contains", "beginsWith", "endsWith", "replace", "toLowerCase", "toUpperCase", "matches"]

    /// Throws the first type error of a rule: its expression must be a boolean.
    public static func checkRule(_ expression: RuleExpression) throws(Fault) {
        let type = try self.type(of: expression)
        guard type.mayBeBoolean else {
            throw Fault(message: "a rule must evaluate to a boolean, not \(type)", near: "")
        }
    }

    public static func type(of expression: RuleExpression) throws(Fault) -> RuleType {
        switch expression {
        case .literal(let value):
            switch value {
            case .null: return .null
            case .bool: return .boolean
            case .number: return .number
            case .string: return .string
            case .list: return .list
            case .map, .snapshot: return .unknown
            }
        case .regex:
            return .regex
        case .array(let elements):
            for element in elements { _ = try self.type(of: element) }
            return .list
        case .variable(let name):
            switch name {
            case "now": return .number
            case "root", "data", "newData": return .snapshot
            case "query": return .query
            case "auth": return .auth
            default: return .string  // a $wildcard: the key, a string
            }
        case .member(.variable("auth"), let name) where name == "uid" || name == "provider":
            return .string  // or null when signed out; strings' members and methods apply
        case .member(let base, let name):
            switch try self.type(of: base) {
            case .snapshot:
                throw Fault(message: "no such property \(name) of a snapshot; its methods are \(self.snapshotMethods.sorted().joined(separator: "(), "))()", near: "." + name)
            case .query:
                guard let type = self.queryMembers[name] else {
                    throw Fault(message: "no such property query.\(name); query has \(self.queryMembers.keys.sorted().joined(separator: ", "))", near: "." + name)
                }
                return type
            case .string, .primitive:
                guard name == "length" else {
                    throw Fault(
                        message: "no such property \(name) of a primitive value (val() of a location with children is not an object: use child('\(name)').val())",
                        near: "." + name)
                }
                return .number
            case .number, .boolean, .list, .regex:
                throw Fault(message: "no such property \(name)", near: "." + name)
            case .null, .unknown, .mixed, .auth:
                return .unknown
            }
        case .index(let base, let index):
            let baseType = try self.type(of: base)
            _ = try self.type(of: index)
            switch baseType {
            case .snapshot: throw Fault(message: "a snapshot has no [...] members; use child()", near: "[")
            case .query, .string, .primitive, .number, .boolean, .list, .regex:
                throw Fault(message: "only auth's maps take [\"name\"], not \(baseType)", near: "[")
            case .null, .unknown, .mixed, .auth: return .unknown
            }
        case .call(let base, let name, let arguments):
            return try self.call(try self.type(of: base), name, arguments)
        case .unary(let op, let operand):
            let type = try self.type(of: operand)
            if op == "!" {
                guard type == .boolean || type == .unknown else { throw Fault(message: "! only operates on booleans, not \(type)", near: "!") }
                return .boolean
            }
            guard type == .number || type == .unknown || type == .primitive else {
                throw Fault(message: "- only operates on numbers, not \(type)", near: "-")
            }
            return .number
        case .binary(let op, let left, let right):
            return try self.binary(op, try self.type(of: left), try self.type(of: right))
        case .conditional(let condition, let yes, let no):
            let conditionType = try self.type(of: condition)
            guard conditionType.mayBeBoolean else {
                throw Fault(message: "the condition of ?: must be a boolean, not \(conditionType)", near: "?")
            }
            let a = try self.type(of: yes)
            let b = try self.type(of: no)
            if a == b { return a }
            if a == .unknown || b == .unknown { return .unknown }
            return .mixed
        }
    }

    private static func binary(_ op: String, _ a: RuleType, _ b: RuleType) throws(Fault) -> RuleType {
        func refuse(_ types: Set<RuleType>, _ what: String) throws(Fault) {
            for type in [a, b] where types.contains(type) {
                throw Fault(message: "\(op) \(what), not \(type)", near: op)
            }
        }
        switch op {
        case "&&", "||":
            for type in [a, b] where !type.mayBeBoolean {
                throw Fault(message: "\(op) only operates on booleans, not \(type)", near: op)
            }
            return .boolean
        case "==", "===", "!=", "!==":
            try refuse([.snapshot, .list, .regex, .query], "compares values (use val() or exists() on a snapshot)")
            return .boolean
        case "<", "<=", ">", ">=":
            try refuse([.snapshot, .list, .regex, .query, .auth, .boolean, .null], "compares two numbers or two strings")
            if a != b, [a, b].allSatisfy({ $0 == .number || $0 == .string }) {
                throw Fault(message: "\(op) compares two numbers or two strings, not \(a) and \(b)", near: op)
            }
            return .boolean
        case "+":
            try refuse([.snapshot, .list, .regex, .query, .auth, .boolean, .null], "adds numbers or joins strings")
            if a == .number && b == .number { return .number }
            if a == .string || b == .string { return .string }
            return .unknown
        default:  // - * / %
            try refuse([.snapshot, .list, .regex, .query, .auth, .null, .string, .boolean], "needs numbers")
            return .number
        }
    }

    private static func call(_ base: RuleType, _ name: String, _ arguments: [RuleExpression]) throws(Fault) -> RuleType {
        var types: [RuleType] = []
        for argument in arguments { types.append(try self.type(of: argument)) }
        func count(_ allowed: ClosedRange<Int>) throws(Fault) {
            guard allowed.contains(types.count) else {
                let expected = allowed.lowerBound == allowed.upperBound ? "\(allowed.lowerBound)" : "\(allowed.lowerBound) or \(allowed.upperBound)"
                throw Fault(message: "\(name)() takes \(expected) argument(s), not \(types.count)", near: "." + name)
            }
        }
        func strings() throws(Fault) {
            for type in types where !(type == .string || type == .unknown || type == .primitive || type == .mixed) {
                throw Fault(message: "\(name)() takes strings, not \(type)", near: "." + name)
            }
        }
        switch base {
        case .snapshot:
            guard self.snapshotMethods.contains(name) else {
                throw Fault(message: "no such method \(name)() of a snapshot; its methods are \(self.snapshotMethods.sorted().joined(separator: "(), "))()", near: "." + name)
            }
            switch name {
            case "child", "hasChild":
                try count(1...1)
                try strings()
                return name == "child" ? .snapshot : .boolean
            case "parent":
                try count(0...0)
                return .snapshot
            case "hasChildren":
                try count(0...1)
                if let type = types.first {
                    guard type == .list || type == .unknown else {
                        throw Fault(message: "hasChildren() takes a list of child names, as in hasChildren(['a', 'b']), not \(type)", near: "." + name)
                    }
                    if case .array(let names)? = arguments.first {
                        for element in names {
                            let type = try self.type(of: element)
                            guard type == .string || type == .unknown || type == .primitive else {
                                throw Fault(message: "hasChildren() names children with strings, not \(type)", near: "." + name)
                            }
                        }
                    }
                }
                return .boolean
            case "val", "getPriority":
                try count(0...0)
                return .primitive
            default:  // exists, isNumber, isString, isBoolean
                try count(0...0)
                return .boolean
            }
        case .string, .primitive, .unknown, .mixed:
            guard self.stringMethods.contains(name) else {
                if base == .unknown && self.snapshotMethods.contains(name) { return .unknown }
                throw Fault(message: "no such method \(name)() of \(base); string methods are \(self.stringMethods.sorted().joined(separator: "(), "))()", near: "." + name)
            }
            switch name {
            case "matches":
                try count(1...1)
                guard types[0] == .regex else {
                    throw Fault(message: "matches() takes a regular expression literal, as in matches(/^a/), not \(types[0])", near: "." + name)
                }
                return .boolean
            case "replace":
                try count(2...2)
                try strings()
                return .string
            case "toLowerCase", "toUpperCase":
                try count(0...0)
                return .string
            default:  // contains, beginsWith, endsWith
                try count(1...1)
                try strings()
                return .boolean
            }
        case .boolean, .number, .null, .list, .regex, .query, .auth:
            throw Fault(message: "no such method \(name)() of \(base)", near: "." + name)
        }
    }
}
