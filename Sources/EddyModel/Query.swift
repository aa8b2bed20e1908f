// An ordered query (Firebase's orderBy + range + limit) and its parsing from the REST query
// string, with Firebase's error texts (firebase-js-sdk api/Reference_impl.ts, the REST API).
//
// Invariants of a built `Query`: at most one start and one end bound; with `.key` order every
// bound is a string and carries no key tie-break; bound values are primitives or null;
// a limit is a positive integer.

public struct Query: Sendable, Equatable {
    public enum Order: Sendable, Equatable {
        case key
        case value
        case priority
        /// A child path, nested paths allowed (`"metrics/views"`).
        case child(Path)
    }

    public struct Bound: Sendable, Equatable {
        public var value: Value
        /// Narrows the bound within equal values (`startAt(v, "k")`); nil means all of them.
        public var key: String?
        /// startAt/endAt/equalTo are inclusive; startAfter/endBefore are not.
        public var inclusive: Bool

        public init(value: Value, key: String? = nil, inclusive: Bool) {
            self.value = value
            self.key = key
            self.inclusive = inclusive
        }
    }

    public enum Limit: Sendable, Equatable {
        case first(Int)
        case last(Int)

        /// How many children the limit keeps, from either end.
        public var count: Int {
            switch self {
            case .first(let count), .last(let count): count
            }
        }
    }

    public var order: Order
    public var start: Bound?
    public var end: Bound?
    public var limit: Limit?

    public init(order: Order, start: Bound? = nil, end: Bound? = nil, limit: Limit? = nil) {
        self.order = order
        self.start = start
        self.end = end
        self.limit = limit
    }

    /// The child path of a child order.
    public var childPath: Path? {
        if case .child(let path) = self.order { return path }
        return nil
    }

    /// The `.indexOn` value a rule needs for this order (nil for key order).
    public var indexOnName: String? {
        switch self.order {
        case .key, .priority: return nil
        case .value: return ".value"
        case .child(let path): return path.keys.joined(separator: "/")
        }
    }
}

/// Collects REST query parameters one by one, then builds the `Query`.
public struct QueryParameters: Sendable {
    public static let names: Set<String> = [
        "orderBy", "startAt", "startAfter", "endAt", "endBefore", "equalTo", "limitToFirst", "limitToLast",
    ]

    private var order: Query.Order?
    private var orderText: String?
    private var start: (name: String, values: [Value])?
    private var end: (name: String, values: [Value])?
    private var equal: [Value]?
    private var limit: Query.Limit?

    public init() {}

    public var isEmpty: Bool {
        self.order == nil && self.start == nil && self.end == nil && self.equal == nil && self.limit == nil
    }

    /// Takes one parameter (`name` must be in `names`; `rawValue` is percent-decoded).
    public mutating func add(_ name: String, _ rawValue: String) throws(EddyError) {
        switch name {
        case "orderBy":
            guard self.order == nil else { throw Self.error("orderBy: You can't combine multiple orderBy calls.") }
            // Firebase's text first (client libraries look for it), then what was wrong.
            let parsed: Value
            do {
                parsed = try JSONParser.parse(rawValue)
            } catch {
                throw Self.error("orderBy must be a valid JSON encoded path: orderBy=\(rawValue.prefix(64)) is not JSON (\(error.message)); quote it, e.g. orderBy=\"age\"")
            }
            guard case .string(let text) = parsed else {
                throw Self.error("orderBy must be a valid JSON encoded path: a JSON string such as \"$key\" or \"age\"")
            }
            self.orderText = text
            switch text {
            case "$key": self.order = .key
            case "$value": self.order = .value
            case "$priority": self.order = .priority
            default:
                let path: Path
                do {
                    path = try Path(text)
                } catch {
                    throw Self.error("orderBy \"\(text)\" is not a valid child path: \(error.message)")
                }
                guard !path.isRoot else { throw Self.error("orderBy \"\(text)\" names no child") }
                self.order = .child(path)
            }
        case "startAt", "startAfter":
            guard self.start == nil, self.equal == nil else {
                throw Self.error(
                    "\(name): Starting point was already set (by another call to startAt, startAfter, or equalTo).")
            }
            self.start = (name, try Self.bound(rawValue, name))
        case "endAt", "endBefore":
            guard self.end == nil, self.equal == nil else {
                throw Self.error("\(name): Ending point was already set (by another call to endAt, endBefore, or equalTo).")
            }
            self.end = (name, try Self.bound(rawValue, name))
        case "equalTo":
            guard self.start == nil, self.equal == nil else {
                throw Self.error(
                    "equalTo: Starting point was already set (by another call to startAt, startAfter, or equalTo).")
            }
            guard self.end == nil else {
                throw Self.error("equalTo: Ending point was already set (by another call to endAt, endBefore, or equalTo).")
            }
            self.equal = try Self.bound(rawValue, name)
        case "limitToFirst", "limitToLast":
            guard self.limit == nil else {
                throw Self.error("\(name): Limit was already set (by another call to limitToFirst or limitToLast).")
            }
            guard rawValue.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), let n = Int(rawValue), n > 0 else {
                throw Self.error("\(name): First argument must be a positive integer, not \(Self.shown(rawValue))")
            }
            self.limit = name == "limitToFirst" ? .first(n) : .last(n)
        default:
            preconditionFailure("QueryParameters.add called with \(name)")
        }
    }

    /// The query, or nil when no query parameter was given.
    public func build() throws(EddyError) -> Query? {
        if self.isEmpty { return nil }
        guard let order = self.order else {
            throw Self.error("orderBy must be defined when other query parameters are defined")
        }
        var query = Query(order: order, limit: self.limit)
        if let equal = self.equal {
            query.start = try Self.makeBound(equal, inclusive: true, order: order)
            query.end = try Self.makeBound(equal, inclusive: true, order: order)
        }
        if let (name, values) = self.start {
            query.start = try Self.makeBound(values, inclusive: name == "startAt", order: order)
        }
        if let (name, values) = self.end {
            query.end = try Self.makeBound(values, inclusive: name == "endAt", order: order)
        }
        return query
    }

    private static func makeBound(_ values: [Value], inclusive: Bool, order: Query.Order) throws(EddyError) -> Query.Bound {
        var key: String? = nil
        if values.count == 2 {
            guard case .string(let k) = values[1] else {
                throw error("the second argument of startAt, startAfter, endAt, endBefore and equalTo must be a key (a string)")
            }
            key = k
        }
        if order == .key {
            guard values.count == 1 else {
                throw error(
                    "When ordering by key, you may only pass one argument to startAt(), endAt(), or equalTo().")
            }
            guard case .string(let bound) = values[0] else {
                throw error("Provided key index type is invalid, must be string")
            }
            let bytes = bound.utf8.count
            guard bytes <= Limits.keyBytesMax else {
                throw error("a key bound is \(bytes) bytes; keys are at most keyBytesMax (\(Limits.keyBytesMax)) bytes")
            }
        }
        return Query.Bound(value: values[0], key: key, inclusive: inclusive)
    }

    private static func bound(_ raw: String, _ name: String) throws(EddyError) -> [Value] {
        let values: [Value]
        do {
            values = try JSONParser.parseList(raw)
        } catch {
            throw Self.error("\(name)=\(Self.shown(raw)) is not JSON: \(error.message)")
        }
        if case .object = values[0] {
            throw Self.error("\(name): a query bound must be null, a boolean, a number or a string, not an object")
        }
        return values
    }

    private static func json(_ raw: String, _ name: String) throws(EddyError) -> Value {
        do {
            return try JSONParser.parse(raw)
        } catch {
            throw Self.error("\(name)=\(Self.shown(raw)) is not JSON: \(error.message)")
        }
    }

    /// A parameter's text in a message: its first 64 characters (a 5 MB value is not echoed).
    private static func shown(_ raw: some StringProtocol) -> String {
        raw.count <= 64 ? String(raw) : raw.prefix(64) + "… (\(raw.utf8.count) bytes)"
    }

    private static func error(_ message: String) -> EddyError {
        EddyError(.invalidArgument, message)
    }
}
