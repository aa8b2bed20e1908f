// Firebase value order (orderByChild / orderByValue): null < false < true < numbers ascending
// < strings (UTF-16 code-unit order) < objects; objects compare equal to each other, and every
// tie is broken by key order by the caller.

public enum ValueOrder {
    private static func rank(_ value: Value) -> Int {
        switch value {
        case .null: return 0
        case .bool(false): return 1
        case .bool(true): return 2
        case .number, .wideInteger: return 3
        case .string: return 4
        case .object: return 5
        }
    }

    /// Compares sort values only (no key tie-break).
    public static func compare(_ a: Value, _ b: Value) -> Int {
        let ra = rank(a)
        let rb = rank(b)
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a, b) {
        case (.number(let x), .number(let y)): return x < y ? -1 : (x > y ? 1 : 0)
        case (.wideInteger(let x), .wideInteger(let y)): return x < y ? -1 : (x > y ? 1 : 0)
        case (.wideInteger(let x), .number(let y)): return compareExactly(x, y)
        case (.number(let x), .wideInteger(let y)): return -compareExactly(y, x)
        case (.string(let x), .string(let y)): return Key.compareUTF16Order(x, y)
        default: return 0
        }
    }

    /// Compares an integer with a Double exactly. Rounding is monotonic, so when `Double(n)`
    /// differs from `d` it orders them; when it equals `d`, `d` is a whole number (every Double
    /// beyond 2^53 is) and, unless it is 2^63 (beyond Int64), compares as one.
    static func compareExactly(_ n: Int64, _ d: Double) -> Int {
        let rounded = Double(n)
        if rounded != d { return rounded < d ? -1 : 1 }
        guard let whole = Int64(exactly: d) else { return d > 0 ? -1 : 1 }
        return n < whole ? -1 : (n > whole ? 1 : 0)
    }

    /// Value order, then key order for ties.
    public static func compare(_ a: Value, key ka: String, _ b: Value, key kb: String) -> Int {
        let c = compare(a, b)
        return c != 0 ? c : Key.compare(ka, kb)
    }
}
