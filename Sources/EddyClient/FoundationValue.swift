// Between the Foundation values Firebase's Apple API takes and gives (`Any?`: NSNumber,
// String, [String: Any], [Any], NSNull) and Eddy's `Value`.
//
// Out (what `DataSnapshot.value` holds), as Firebase's client gives it: no data is `NSNull`;
// numbers and booleans are `NSNumber` (so `as? Int`, `as? Double` and `as? Bool` work as on
// Apple platforms); objects are `[String: Any]`, except that an object whose keys are all
// integers 0... with more than half of 0...max present is an array (`[Any]`, `NSNull` in the
// holes), Firebase's array rule.
// In: `nil`/`NSNull` is null; Swift numbers, `NSNumber` (a boolean NSNumber is a boolean),
// `String`, dictionaries with `String` keys, arrays (as objects keyed "0", "1", ...) and
// `ServerValue` placeholders. Anything else is refused with a message naming the path. Data to
// write (`sent`) keeps Firebase's `.value`/`.priority` forms (the export form the server stores).

import EddyModel
import Foundation

enum FoundationValue {
    /// `arrays: false` is Firebase's export format (`valueInExportFormat`): objects stay
    /// dictionaries even when their keys are list indexes.
    static func foundation(_ value: Value, arrays: Bool = true) -> Any {
        switch value {
        case .null: return NSNull()
        case .bool(let b): return NSNumber(value: b)
        case .number(let d):
            if d == d.rounded(), let whole = Int(exactly: d) { return NSNumber(value: whole) }  // every whole number in Int's range
            return NSNumber(value: d)
        case .wideInteger(let n): return NSNumber(value: n)
        case .string(let s): return s
        case .object(let children):
            if arrays, let array = self.array(children) { return array }
            var out: [String: Any] = [:]
            out.reserveCapacity(children.count)
            for (key, child) in children { out[key] = self.foundation(child, arrays: arrays) }
            return out
        }
    }

    /// Firebase's rule: every key an integer >= 0, and more than half of 0...max present.
    private static func array(_ children: [String: Value]) -> [Any]? {
        guard !children.isEmpty else { return nil }
        var maxIndex = -1
        var indexed: [(Int, Value)] = []
        indexed.reserveCapacity(children.count)
        for (key, child) in children {
            guard let index = Int(key), index >= 0, String(index) == key else { return nil }
            maxIndex = max(maxIndex, index)
            indexed.append((index, child))
        }
        guard maxIndex < 2 * children.count else { return nil }
        var out = [Any](repeating: NSNull(), count: maxIndex + 1)
        for (index, child) in indexed { out[index] = self.foundation(child) }
        return out
    }

    /// The data to send for a write, in the export form, priorities kept (the server stores
    /// them). As Firebase's Apple SDK (FSnapshotUtilities), a `.value` wrapper holds a leaf: an
    /// object or array in it is refused naming its path.
    static func sent(_ any: Any?, path: String) throws(DatabaseError) -> Value {
        let value = try self.value(any, path: path)
        try self.checkWrappedLeaves(value, path: path)
        return value
    }

    /// A priority given to `setValue(_:andPriority:)` or `setPriority`: a number, a string,
    /// nil (none) or `ServerValue.timestamp()`, as Firebase's FValidation takes.
    static func priority(_ any: Any?, path: String) throws(DatabaseError) -> Value {
        let value = try self.value(any, path: path)
        switch value {
        case .null, .number, .wideInteger, .string: return value
        case .object(let members) where members.count == 1 && members[WriteValidator.serverValueKey] != nil:
            do {
                try WriteValidator.validatePriority(value, at: Path(validatedKeys: []))
            } catch {
                throw DatabaseError(.invalidValue, "Invalid priority at \(path): \(error.message)")
            }
            return value
        default:
            throw DatabaseError(
                .invalidValue, "Invalid priority at \(path): a priority is a number, a string, nil, ServerValue.timestamp() or ServerValue.increment(_:)")
        }
    }

    private static func checkWrappedLeaves(_ value: Value, path: String) throws(DatabaseError) {
        guard case .object(let children) = value else { return }
        if case .object(let wrapped)? = children[".value"], wrapped[WriteValidator.serverValueKey] == nil {  // a server value is a leaf
            throw DatabaseError(
                .invalidValue, "Invalid data type used with .value at \(path). Can only use NSString and NSNumber or be null.")
        }
        for (key, child) in children { try self.checkWrappedLeaves(child, path: path + "/" + key) }
    }

    /// `value` as a `Value`; throws `invalidValue` naming `path` for what JSON cannot hold,
    /// and for a value nested deeper than `Limits.jsonDepthMax` (as Firebase's "Max object
    /// depth exceeded"; a dictionary that holds itself would otherwise recurse without end).
    static func value(_ any: Any?, path: String, depth: Int = 0) throws(DatabaseError) -> Value {
        guard let any else { return .null }
        if let optional = any as? any OptionalProtocol {
            guard let wrapped = optional.wrapped else { return .null }
            return try self.value(wrapped, path: path, depth: depth)
        }
        guard depth <= Limits.jsonDepthMax else {
            throw DatabaseError(
                .invalidValue,
                "Max object depth exceeded: the value at \(path.split(separator: "/").prefix(4).joined(separator: "/"))/... is nested more than \(Limits.jsonDepthMax) levels deep (does it contain itself?)")
        }
        switch any {
        case is NSNull: return .null
        case let b as Bool where type(of: any) == Bool.self: return .bool(b)
        case let s as String: return .string(s)
        case let n as NSNumber where !(type(of: any) is any BinaryInteger.Type) && !(type(of: any) is any BinaryFloatingPoint.Type):
            let type = String(cString: n.objCType)
            if type == "c" || type == "B" { return .bool(n.boolValue) }
            // Integers keep every digit (Firebase keeps 64-bit integers); unsigned ones beyond
            // Int64 become the nearest Double.
            if ["q", "l", "i", "s"].contains(type) { return Value.integer(n.int64Value) }
            if ["Q", "L", "I", "S", "C"].contains(type) {
                if let whole = Int64(exactly: n.uint64Value) { return Value.integer(whole) }
                return .number(n.doubleValue)
            }
            return try self.number(n.doubleValue, path: path)
        case let i as any BinaryInteger:
            if let whole = Int64(exactly: i) { return Value.integer(whole) }
            return try self.number(Double(i), path: path)
        case let d as Double: return try self.number(d, path: path)
        case let f as Float: return try self.number(Double(f), path: path)
        case let g as CGFloat: return try self.number(Double(g), path: path)  // an NSNumber on Apple platforms
        // Foundation's own dictionaries first, one level at a time: on Linux, casting one to a
        // Swift dictionary, or reading a value by key or by iterating, bridges every level
        // below at once, and never ends for one that holds itself; `allKeys` and `allValues`
        // (in the same order) hand the stored objects over as they are.
        case let dictionary as NSDictionary where type(of: any) is NSDictionary.Type:
            var children: [String: Value] = [:]
            for (key, child) in zip(dictionary.allKeys, dictionary.allValues) {
                guard let key = key as? String else {
                    throw DatabaseError(.invalidValue, "a dictionary at \(path.isEmpty ? "/" : path) has a key that is not a string: \(key)")
                }
                children[key] = try self.value(child, path: path + "/" + key, depth: depth + 1)
            }
            return .object(children)
        case let array as NSArray where type(of: any) is NSArray.Type:
            var children: [String: Value] = [:]
            for (index, child) in array.enumerated() { children[String(index)] = try self.value(child, path: path + "/\(index)", depth: depth + 1) }
            return .object(children)
        case let dictionary as [String: Any?]:
            var children: [String: Value] = [:]
            for (key, child) in dictionary { children[key] = try self.value(child, path: path + "/" + key, depth: depth + 1) }
            return .object(children)
        case let dictionary as [String: Any]:
            var children: [String: Value] = [:]
            for (key, child) in dictionary { children[key] = try self.value(child, path: path + "/" + key, depth: depth + 1) }
            return .object(children)
        case let array as [Any?]:
            var children: [String: Value] = [:]
            for (index, child) in array.enumerated() { children[String(index)] = try self.value(child, path: path + "/\(index)", depth: depth + 1) }
            return .object(children)
        case let dictionary as NSDictionary:  // a Swift dictionary with keys that are not strings
            if let key = dictionary.allKeys.first(where: { !($0 is String) }) {
                throw DatabaseError(.invalidValue, "a dictionary at \(path.isEmpty ? "/" : path) has a key that is not a string: \(key)")
            }
            throw DatabaseError(.invalidValue, "cannot store a \(type(of: any)) at \(path.isEmpty ? "/" : path): use [String: Any]")
        default:
            throw DatabaseError(
                .invalidValue,
                "cannot store a \(type(of: any)) at \(path.isEmpty ? "/" : path): use String, a number, Bool, NSNull, [String: Any], [Any] or ServerValue")
        }
    }

    private static func number(_ d: Double, path: String) throws(DatabaseError) -> Value {
        guard d.isFinite else {
            throw DatabaseError(.invalidValue, "\(d) at \(path.isEmpty ? "/" : path) is not a finite number; JSON cannot hold it")
        }
        return .number(d)
    }
}

/// Lets `value(_:path:)` see through `Optional` wrapped in `Any`.
private protocol OptionalProtocol {
    var wrapped: Any? { get }
}

extension Optional: OptionalProtocol {
    var wrapped: Any? {
        switch self {
        case .some(let value): return value
        case .none: return nil
        }
    }
}
