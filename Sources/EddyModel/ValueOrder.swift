// Firebase value order (orderByChild / orderByValue): null < false < true < numbers ascending
// < strings (UTF-16 code-unit order) < objects; objects compare equal to each other, and every
// tie is broken by key order by the caller.

public enum ValueOrder {
    private static func rank(_ value: Value) -> Int {
        switch value {
        case .null: return 0
        case .bool(false): return 1
        case .bool(true): return 2
        case .number: return 3
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
        case (.string(let x), .string(let y)): return Key.compareUTF16Order(x, y)
        default: return 0
        }
    }

    /// Value order, then key order for ties.
    public static func compare(_ a: Value, key ka: String, _ b: Value, key kb: String) -> Int {
        let c = compare(a, b)
        return c != 0 ? c : Key.compare(ka, kb)
    }
}
