// What a `DatabaseQuery` asks for: an order, bounds and a limit, checked call by call with
// the messages Firebase's Apple SDK raises (FIRDatabaseQuery.m). Swift code cannot catch the
// NSException Firebase raises, so a query built with an invalid combination carries the
// message instead (`error`), and every use of it (observe, getData) reports it as an
// `invalidQuery` error through the cancel block, the completion or the thrown error, without
// asking the server. Decided here, documented in README "Swift client".

import EddyModel
import Foundation

struct QuerySpec: Sendable, Equatable {
    struct Bound: Sendable, Equatable {
        var value: Value
        var key: String?
        var inclusive: Bool
    }

    /// nil: no queryOrdered call (Firebase's default priority order, key order where no child
    /// has a priority).
    var order: Query.Order?
    var start: Bound?
    var end: Bound?
    var limit: Query.Limit?
    /// The first invalid call, with Firebase's message.
    var error: String?

    var isDefault: Bool { self.order == nil && self.start == nil && self.end == nil && self.limit == nil }

    /// No bounds and no limit (an order at most): Firebase loads the whole location for it, and
    /// its value is the location's, a primitive too.
    var loadsAllData: Bool { self.start == nil && self.end == nil && self.limit == nil }

    /// The order of the window: Firebase's default is priority order (bounds without an order,
    /// `queryStarting(atValue: nil, childKey: "c")`, are priority bounds); with every priority
    /// null it lists children by key.
    var effectiveOrder: Query.Order { self.order ?? .priority }

    // MARK: Building (each returns a copy; the first error sticks)

    func ordered(_ order: Query.Order, method: String) -> QuerySpec {
        var next = self
        guard next.error == nil else { return next }
        if self.order != nil {
            next.error = "Cannot use multiple queryOrderedBy calls!"
            return next
        }
        next.order = order
        next.validateEndpoints(method: method)
        return next
    }

    func starting(_ any: Any?, key: String?, inclusive: Bool, method: String) -> QuerySpec {
        var next = self
        guard next.error == nil else { return next }
        guard let value = Self.boundValue(any, method: method, into: &next) else { return next }
        if self.start != nil {
            next.error = "Can't call \(method) after queryStartingAtValue, queryStartingAfterValue, or queryEqualToValue was previously called"
            return next
        }
        if self.order == .key, key != nil {
            next.error = "You must use \(inclusive ? "queryStartingAtValue:" : "queryStartingAfterValue:") instead of \(method) when using queryOrderedByKey:"
            return next
        }
        if let key, let error = Self.childKeyError(key, method: method) {
            next.error = error
            return next
        }
        next.start = Bound(value: value, key: key, inclusive: inclusive)
        next.validateEndpoints(method: method)
        return next
    }

    func ending(_ any: Any?, key: String?, inclusive: Bool, method: String) -> QuerySpec {
        var next = self
        guard next.error == nil else { return next }
        guard let value = Self.boundValue(any, method: method, into: &next) else { return next }
        if self.end != nil {
            next.error = "Can't call \(method) after queryEndingAtValue or queryEqualToValue was previously called"
            return next
        }
        if self.order == .key, key != nil {
            next.error = "You must use \(inclusive ? "queryEndingAtValue:" : "queryEndingBeforeValue:") instead of \(method) when using queryOrderedByKey:"
            return next
        }
        if let key, let error = Self.childKeyError(key, method: method) {
            next.error = error
            return next
        }
        next.end = Bound(value: value, key: key, inclusive: inclusive)
        next.validateEndpoints(method: method)
        return next
    }

    func equal(_ any: Any?, key: String?, method: String) -> QuerySpec {
        var next = self
        guard next.error == nil else { return next }
        guard let value = Self.boundValue(any, method: method, into: &next) else { return next }
        if self.start != nil || self.end != nil {
            // Firebase's text (FIRDatabaseQuery queryEqualToInternal).
            next.error =
                "Can't call \(method) after queryStartingAtValue, queryStartingAfterValue, queryEndingAtValue, queryEndingBeforeValue or queryEqualToValue was previously called"
            return next
        }
        if self.order == .key, key != nil {
            next.error = "You must use queryEqualToValue: instead of queryEqualTo:childKey: when using queryOrderedByKey:"
            return next
        }
        if let key, let error = Self.childKeyError(key, method: method) {
            next.error = error
            return next
        }
        next.start = Bound(value: value, key: key, inclusive: true)
        next.end = Bound(value: value, key: key, inclusive: true)
        next.validateEndpoints(method: method)
        return next
    }

    func limited(_ limit: UInt, first: Bool) -> QuerySpec {
        var next = self
        guard next.error == nil else { return next }
        let method = first ? "queryLimitedToFirst:" : "queryLimitedToLast:"
        if self.limit != nil {
            next.error = "Can't call \(method) if a limit was previously set"
            return next
        }
        guard limit > 0 else {
            next.error = "Limit can't be zero"
            return next
        }
        guard limit <= UInt(Int32.max) else {
            next.error = "Limit must be less than 2,147,483,648"
            return next
        }
        next.limit = first ? .first(Int(limit)) : .last(Int(limit))
        return next
    }

    /// Firebase's check of a bound's child key (FValidation validateFrom:validKey:): a
    /// non-empty key without `/ . # $ [ ]`.
    private static func childKeyError(_ key: String, method: String) -> String? {
        guard key.isEmpty || key.contains(where: { "/.#$[]".contains($0) }) else { return nil }
        return "(\(method)) Must be a non-empty string and not contain '/' '.' '#' '$' '[' or ']'"
    }

    private static func boundValue(_ any: Any?, method: String, into spec: inout QuerySpec) -> Value? {
        let value: Value
        do {
            value = try FoundationValue.value(any, path: "")
        } catch {
            spec.error = "You can only pass nil, NSString or NSNumber to \(method)"
            return nil
        }
        if case .object = value {
            spec.error = "You can only pass nil, NSString or NSNumber to \(method)"
            return nil
        }
        return value
    }

    private mutating func validateEndpoints(method: String) {
        if self.order == .priority || self.order == nil {
            // Priority order (Firebase's default index too): bounds must be valid priorities
            // (FIRDatabaseQuery validateQueryEndpointsForParams), so no booleans.
            for bound in [self.start, self.end].compactMap({ $0 }) {
                if case .bool = bound.value {
                    self.error =
                        "When using queryOrderedByPriority, values provided to queryStartingAtValue:, queryStartingAfterValue:, queryEndingAtValue:, queryEndingBeforeValue:, or queryEqualToValue: must be valid priorities."
                }
            }
            return
        }
        guard self.order == .key else { return }
        if let start = self.start {
            if start.key != nil {
                self.error = "Can't use queryStartingAtValue:childKey:, queryStartingAfterValue:childKey:, or queryEqualTo:andChildKey: in combination with queryOrderedByKey"
            } else if case .string = start.value {
            } else {
                self.error = "Can't use queryStartingAtValue: or queryStartingAfterValue: with non-string types when used with queryOrderedByKey"
            }
        }
        if self.error == nil, let end = self.end {
            if end.key != nil {
                self.error = "Can't use queryEndingAtValue:childKey: or queryEndingBeforeValue:childKey: queryEqualToValue:childKey: in combination with queryOrderedByKey"
            } else if case .string = end.value {
            } else {
                self.error = "Can't use queryEndingAtValue: or queryEndingBeforeValue: with other types than string in combination with queryOrderedByKey"
            }
        }
    }

    // MARK: On the wire

    /// The REST parameter texts the native protocol takes (`query` of `subscribe`/`query`);
    /// nil for a plain location.
    var parameters: Value? {
        if self.isDefault { return nil }
        var out: [String: Value] = [:]
        switch self.order {
        case .key: out["orderBy"] = .string("\"$key\"")
        case .value: out["orderBy"] = .string("\"$value\"")
        case .priority:
            // eddyd selects by the stored priorities (reads and live windows).
            out["orderBy"] = .string("\"$priority\"")
        case nil:
            // Firebase's default order (a limit alone selects by priority, then key).
            out["orderBy"] = .string("\"$priority\"")
        case .child(let path): out["orderBy"] = .string(JSONWriter.string(.string(path.keys.joined(separator: "/"))))
        }
        func text(_ bound: Bound) -> String {
            JSONWriter.string(bound.value) + (bound.key.map { "," + JSONWriter.string(.string($0)) } ?? "")
        }
        if let start = self.start, let end = self.end, start == end, start.inclusive {
            out["equalTo"] = .string(text(start))
        } else {
            if let start = self.start { out[start.inclusive ? "startAt" : "startAfter"] = .string(text(start)) }
            if let end = self.end { out[end.inclusive ? "endAt" : "endBefore"] = .string(text(end)) }
        }
        switch self.limit {
        case .first(let n): out["limitToFirst"] = .string(String(n))
        case .last(let n): out["limitToLast"] = .string(String(n))
        case nil: break
        }
        return .object(out)
    }
}
