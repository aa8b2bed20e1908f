// Tests of the query oracle (`ReferenceModel.query`, EddyTesting) on its own, against orders
// written out by hand from FIREBASE_REFERENCE §2 and §3. The engine suites trust the oracle, so
// it gets its own hand-checked examples. (EddyTesting has no test target; these live here.)

import EddyModel
import EddyTesting
import Testing

@Suite struct ReferenceQueryTests {
    /// FIREBASE_REFERENCE §2.2's example.
    static let heights = json(#"{"a":{"h":3},"b":{"h":"x"},"c":{"x":1},"d":{"h":true},"e":{"h":false},"f":{"h":{"k":1}},"g":{"h":1.5}}"#)

    static func model(_ list: Value) -> ReferenceModel {
        ReferenceModel(root: .object(["list": list]))
    }

    static func bound(_ value: Value, _ key: String? = nil, inclusive: Bool = true) -> Query.Bound {
        Query.Bound(value: value, key: key, inclusive: inclusive)
    }

    /// Keys in query order (no limit) for `query` at /list.
    static func order(_ list: Value, _ query: Query) -> [String] {
        guard case .object(let children) = list else { return [] }
        return ReferenceModel.select(children, query)
    }

    /// The selected keys of a query result, as a set.
    static func keys(_ result: Value) -> Set<String> {
        guard case .object(let children) = result else { return [] }
        return Set(children.keys)
    }

    @Test func firebaseReferenceExampleOrderByChild() {
        let query = Query(order: .child(p("h")))
        #expect(Self.order(Self.heights, query) == ["c", "e", "d", "g", "a", "b", "f"])
        let model = Self.model(Self.heights)
        #expect(model.query(p("/list"), query) == Self.heights)
        for n in 1...7 {
            let first = model.query(p("/list"), Query(order: .child(p("h")), limit: .first(n)))
            #expect(Self.keys(first) == Set(["c", "e", "d", "g", "a", "b", "f"].prefix(n)), "first \(n)")
            let last = model.query(p("/list"), Query(order: .child(p("h")), limit: .last(n)))
            #expect(Self.keys(last) == Set(["c", "e", "d", "g", "a", "b", "f"].suffix(n)), "last \(n)")
        }
        // The selected children keep their whole values.
        #expect(model.query(p("/list"), Query(order: .child(p("h")), limit: .first(1))) == json(#"{"c":{"x":1}}"#))
    }

    @Test func boundsOnChildOrder() {
        let model = Self.model(Self.heights)
        func keys(_ start: Query.Bound?, _ end: Query.Bound?) -> Set<String> {
            Self.keys(model.query(p("/list"), Query(order: .child(p("h")), start: start, end: end)))
        }
        #expect(keys(Self.bound(.bool(true)), nil) == ["d", "g", "a", "b", "f"])
        #expect(keys(Self.bound(.bool(true), inclusive: false), nil) == ["g", "a", "b", "f"])
        #expect(keys(nil, Self.bound(.number(3))) == ["c", "e", "d", "g", "a"])
        #expect(keys(nil, Self.bound(.number(3), inclusive: false)) == ["c", "e", "d", "g"])
        #expect(keys(Self.bound(.null), Self.bound(.null)) == ["c"])  // equalTo(null): the missing child
        #expect(keys(Self.bound(.number(2)), Self.bound(.string(""))) == ["a"])
        #expect(keys(Self.bound(.string("x")), nil) == ["b", "f"])
        #expect(keys(Self.bound(.string("y")), nil) == ["f"])  // objects sort after every string
        #expect(keys(Self.bound(.number(100)), Self.bound(.number(-100))) == [])
    }

    @Test func keyTieBreaksNarrowWithinEqualValues() {
        let list = json(#"{"a":1,"b":1,"c":1,"d":2,"1":1,"01":1,"x":0}"#)
        // Key order among the value-1 ties: "1" < "01" < "a" < "b" < "c".
        #expect(Self.order(list, Query(order: .value)) == ["x", "1", "01", "a", "b", "c", "d"])
        let model = Self.model(list)
        func keys(_ start: Query.Bound?, _ end: Query.Bound?) -> Set<String> {
            Self.keys(model.query(p("/list"), Query(order: .value, start: start, end: end)))
        }
        #expect(keys(Self.bound(.number(1), "a"), nil) == ["a", "b", "c", "d"])
        #expect(keys(Self.bound(.number(1), "a", inclusive: false), nil) == ["b", "c", "d"])
        #expect(keys(Self.bound(.number(1), "01"), Self.bound(.number(1), "b")) == ["01", "a", "b"])
        #expect(keys(nil, Self.bound(.number(1), "01")) == ["x", "1", "01"])
        #expect(keys(nil, Self.bound(.number(1), "01", inclusive: false)) == ["x", "1"])
        // A tie-break key that no child has still falls between the right children.
        #expect(keys(Self.bound(.number(1), "aa"), Self.bound(.number(1), "zz")) == ["b", "c"])
        #expect(keys(Self.bound(.number(1), "0"), Self.bound(.number(1), "0")) == [])
        // Without a key, startAfter(v) skips every tie and endBefore(v) stops before every tie.
        #expect(keys(Self.bound(.number(1), inclusive: false), nil) == ["d"])
        #expect(keys(nil, Self.bound(.number(1), inclusive: false)) == ["x"])
        // equalTo(v, k) is the one child.
        #expect(keys(Self.bound(.number(1), "b"), Self.bound(.number(1), "b")) == ["b"])
        // The key of a bound only matters among ties: (0, "zzz") is before every value-1 child.
        #expect(keys(Self.bound(.number(0), "zzz", inclusive: false), Self.bound(.number(2), "0")) == ["1", "01", "a", "b", "c"])
    }

    @Test func sentinelAndNonKeyTieBreaks() {
        let list = json(#"{"a":1,"b":1,"c":1,"d":2}"#)
        let model = Self.model(list)
        func keys(_ start: Query.Bound?, _ end: Query.Bound?) -> Set<String> {
            Self.keys(model.query(p("/list"), Query(order: .value, start: start, end: end)))
        }
        #expect(keys(Self.bound(.number(1), "[MAX_NAME]"), nil) == ["d"])  // startAfter(1) as the JS SDK sends it
        #expect(keys(Self.bound(.number(1), "[MIN_NAME]"), nil) == ["a", "b", "c", "d"])
        #expect(keys(nil, Self.bound(.number(1), "[MIN_NAME]")) == [])  // endBefore(1)
        #expect(keys(nil, Self.bound(.number(1), "[MAX_NAME]")) == ["a", "b", "c"])
        // Strings that are no valid key still compare as keys: "" first, "a\0" right after "a".
        #expect(keys(Self.bound(.number(1), ""), Self.bound(.number(1), "a\u{0}")) == ["a"])
        #expect(keys(Self.bound(.number(1), "a\u{0}"), Self.bound(.number(1), "b.x")) == ["b"])
        // Under key order the sentinels are plain strings ("[" sorts between "Z" and "a").
        let keyed = Self.model(json(#"{"Z":1,"a":1}"#))
        #expect(Self.keys(keyed.query(p("/list"), Query(order: .key, start: Self.bound(.string("[MAX_NAME]"))))) == ["a"])
    }

    @Test func keyOrderComparesBoundStringsAsKeys() {
        let list = json(#"{"-1":"a","0":"a","1":"a","01":"a","2":"a","10":"a","2147483647":"a","2147483648":"a","A":"a","b":"a"}"#)
        let all = ["-1", "0", "1", "01", "2", "10", "2147483647", "2147483648", "A", "b"]
        #expect(Self.order(list, Query(order: .key)) == all)
        let model = Self.model(list)
        func keys(_ start: Query.Bound?, _ end: Query.Bound?, _ limit: Query.Limit? = nil) -> Set<String> {
            Self.keys(model.query(p("/list"), Query(order: .key, start: start, end: end, limit: limit)))
        }
        #expect(keys(Self.bound(.string("1")), Self.bound(.string("10"))) == ["1", "01", "2", "10"])
        #expect(keys(Self.bound(.string("1"), inclusive: false), Self.bound(.string("10"), inclusive: false)) == ["01", "2"])
        #expect(keys(Self.bound(.string("3")), nil, .first(2)) == ["10", "2147483647"])
        #expect(keys(nil, Self.bound(.string("-")), .last(2)) == ["10", "2147483647"])
        #expect(keys(Self.bound(.string("a")), nil) == ["b"])
    }

    @Test func mixedTypesOrderByValue() {
        let list = json(
            #"{"o":{"z":1},"s2":"b","s1":"a","n3":1e300,"n2":0,"n1":-5,"t":true,"f":false,"u":"\u00e9","w":"\ud83d\ude00","v":"\uff61"}"#)
        // Strings in UTF-16 code-unit order: "😀" (surrogates D83D…) sorts before "｡" (FF61).
        #expect(Self.order(list, Query(order: .value)) == ["f", "t", "n1", "n2", "n3", "s1", "s2", "u", "w", "v", "o"])
    }

    @Test func nestedChildPathsAndPrimitiveIntermediates() {
        let list = json(#"{"a":{"m":{"v":2}},"b":{"m":5},"c":{"m":{"v":1}},"d":7,"e":{"m":{"v":{"deep":1}}}}"#)
        // b's "m" is a primitive and d is a primitive: both have no m/v, so null and first.
        #expect(Self.order(list, Query(order: .child(p("m/v")))) == ["b", "d", "c", "a", "e"])
        // By "m": d has none (null), b's is a number, a/c/e hold objects, which all tie.
        #expect(Self.order(list, Query(order: .child(p("m")))) == ["d", "b", "a", "c", "e"])
    }

    @Test func negativeZeroTiesWithZero() {
        let list: Value = .object(["b": .number(-0.0), "a": .number(0), "c": .number(-1)])
        #expect(Self.order(list, Query(order: .value)) == ["c", "a", "b"])
        let model = Self.model(list)
        #expect(Self.keys(model.query(p("/list"), Query(order: .value, start: Self.bound(.number(0)), end: Self.bound(.number(-0.0))))) == ["a", "b"])
    }

    @Test func primitivesAndMissingLocationsSelectNothing() {
        let model = ReferenceModel(root: json(#"{"leaf":3,"list":{"a":1}}"#))
        for order: Query.Order in [.key, .value, .child(p("x"))] {
            #expect(model.query(p("/leaf"), Query(order: order)) == .null)
            #expect(model.query(p("/missing"), Query(order: order)) == .null)
            #expect(model.query(p("/leaf/below"), Query(order: order)) == .null)
        }
        #expect(model.query(p("/list"), Query(order: .value, start: Self.bound(.number(2)))) == .null)
        #expect(model.query(.root, Query(order: .key, limit: .first(1))) == json(#"{"leaf":3}"#))
    }

    @Test func limitsApplyAfterTheBounds() {
        let list = json(#"{"a":1,"b":2,"c":3,"d":4,"e":5}"#)
        let model = Self.model(list)
        let window = (start: Self.bound(.number(2)), end: Self.bound(.number(4)))
        #expect(Self.keys(model.query(p("/list"), Query(order: .value, start: window.start, end: window.end, limit: .first(2)))) == ["b", "c"])
        #expect(Self.keys(model.query(p("/list"), Query(order: .value, start: window.start, end: window.end, limit: .last(2)))) == ["c", "d"])
        #expect(Self.keys(model.query(p("/list"), Query(order: .value, limit: .last(10)))) == ["a", "b", "c", "d", "e"])
    }
}
