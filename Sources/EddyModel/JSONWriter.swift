// Renders a `Value` as JSON the way Firebase answers reads:
// - object members in Firebase key order (clients re-sort anyway; this makes output stable,
//   which the ETag relies on);
// - a node whose keys are all `0|[1-9][0-9]*` and whose largest key is < 2 × its child count
//   is rendered as an array, holes as null (Firebase's `val()` rule), unless `arrays` is false
//   (Firebase's `format=export`, which never converts);
// - `pretty`: Firebase's `print=pretty` layout (Jackson's default pretty printer): an object's
//   members one per line, two spaces per enclosing object, `"key" : value`; an array on one
//   line, `[ a, b ]` (it adds no indentation level; an object inside it still breaks lines);
// - integral numbers below 2^53 without a fraction, others in shortest round-trip form;
// - non-ASCII characters as UTF-8, control characters escaped.

public enum JSONWriter {
    public static func bytes(_ value: Value, pretty: Bool = false, arrays: Bool = true) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(value, into: &out, pretty: pretty, indent: 0, arrays: arrays)
        return out
    }

    public static func string(_ value: Value, pretty: Bool = false) -> String {
        String(decoding: bytes(value, pretty: pretty), as: UTF8.self)
    }

    public static func write(_ value: Value, into out: inout [UInt8], pretty: Bool, indent: Int, arrays: Bool = true) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): writeNumber(n, into: &out)
        case .wideInteger(let n): appendInteger(n, to: &out)
        case .string(let s): writeString(s, into: &out)
        case .object(let children):
            if arrays, let array = arrayElements(children) {
                out.append(UInt8(ascii: "["))
                for (i, element) in array.enumerated() {
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    if pretty { out.append(UInt8(ascii: " ")) }
                    write(element, into: &out, pretty: pretty, indent: indent, arrays: arrays)
                }
                if pretty { out.append(UInt8(ascii: " ")) }
                out.append(UInt8(ascii: "]"))
            } else {
                let members = sortedMembers(children)
                writeContainer(open: "{", close: "}", count: members.count, into: &out, pretty: pretty, indent: indent) {
                    out, i in
                    writeString(members[i].key, into: &out)
                    writeMemberSeparator(into: &out, pretty: pretty)
                    write(members[i].value, into: &out, pretty: pretty, indent: indent + 1, arrays: arrays)
                }
            }
        }
    }

    /// Keys in Firebase key order; each key's integer value is computed once, not per
    /// comparison.
    public static func sortedKeys(_ children: [String: Value]) -> [String] {
        sortedMembers(children).map(\.key)
    }

    static func sortedMembers(_ children: [String: Value]) -> [(key: String, value: Value)] {
        if children.count == 1 { return children.map { ($0.key, $0.value) } }
        var decorated = children.map { (integer: Key.integerValue($0.key), key: $0.key, value: $0.value) }
        decorated.sort { a, b in
            switch (a.integer, b.integer) {
            case (let x?, let y?):
                if x != y { return x < y }
                let (la, lb) = (a.key.utf8.count, b.key.utf8.count)
                if la != lb { return la < lb }
                return Key.compareUTF16Order(a.key, b.key) < 0
            case (.some, .none): return true
            case (.none, .some): return false
            case (.none, .none): return Key.compareUTF16Order(a.key, b.key) < 0
            }
        }
        return decorated.map { ($0.key, $0.value) }
    }

    private static func writeContainer(
        open: Unicode.Scalar, close: Unicode.Scalar, count: Int, into out: inout [UInt8], pretty: Bool, indent: Int,
        element: (inout [UInt8], Int) -> Void
    ) {
        out.append(UInt8(ascii: open))
        for i in 0..<count {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            if pretty { newline(&out, indent + 1) }
            element(&out, i)
        }
        if pretty, count > 0 { newline(&out, indent) }
        out.append(UInt8(ascii: close))
    }

    /// `:` between a member's key and value; ` : ` when pretty, as Firebase prints.
    public static func writeMemberSeparator(into out: inout [UInt8], pretty: Bool) {
        if pretty {
            out.append(contentsOf: " : ".utf8)
        } else {
            out.append(UInt8(ascii: ":"))
        }
    }

    public static func newline(_ out: inout [UInt8], _ indent: Int) {
        out.append(UInt8(ascii: "\n"))
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }

    /// The elements when `children` renders as an array, else nil.
    public static func arrayElements(_ children: [String: Value]) -> [Value]? {
        // An empty object (never stored: the tree normalizes it to null; only built by the
        // server, e.g. a status with no followers) stays `{}`.
        if children.isEmpty { return nil }
        var maxIndex = -1
        for key in children.keys {
            guard let index = arrayIndex(key) else { return nil }
            maxIndex = max(maxIndex, index)
        }
        guard maxIndex < 2 * children.count else { return nil }
        var elements = [Value](repeating: .null, count: maxIndex + 1)
        for (key, child) in children { elements[arrayIndex(key)!] = child }
        return elements
    }

    /// Renders members whose values are already JSON, by the same rules as `write`: an array
    /// when every key is an array index and the largest < 2 × the count (holes as null),
    /// otherwise an object with the members in the given order; `null` when there are none.
    public static func renderMembers(_ members: [(key: String, json: [UInt8])]) -> [UInt8] {
        guard !members.isEmpty else { return Array("null".utf8) }
        var out: [UInt8] = []
        out.reserveCapacity(members.reduce(2) { $0 + $1.key.utf8.count + $1.json.count + 4 })
        var indexes: [Int] = []
        indexes.reserveCapacity(members.count)
        for member in members {
            guard let index = arrayIndex(member.key) else { break }
            indexes.append(index)
        }
        if indexes.count == members.count, let largest = indexes.max(), largest < 2 * members.count {
            var slots = [Int?](repeating: nil, count: largest + 1)
            for (position, index) in indexes.enumerated() { slots[index] = position }
            out.append(UInt8(ascii: "["))
            for (i, slot) in slots.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                if let slot { out.append(contentsOf: members[slot].json) } else { out.append(contentsOf: "null".utf8) }
            }
            out.append(UInt8(ascii: "]"))
            return out
        }
        out.append(UInt8(ascii: "{"))
        for (i, member) in members.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            writeString(member.key, into: &out)
            out.append(UInt8(ascii: ":"))
            out.append(contentsOf: member.json)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// `0|[1-9][0-9]*` as an Int small enough to index an array, else nil.
    public static func arrayIndex(_ key: String) -> Int? {
        let utf8 = key.utf8
        guard let first = utf8.first, utf8.count <= 9 else { return nil }
        if first == UInt8(ascii: "0") { return utf8.count == 1 ? 0 : nil }
        var value = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    public static func writeNumber(_ n: Double, into out: inout [UInt8]) {
        // Whole numbers in Int64's range are written as integers (Swift's `description` would
        // write 2^53 as "9007199254740992.0" and 2^60 as "1.152921504606847e+18", which JSON
        // readers such as Python's take for a float).
        if n == n.rounded(.towardZero), let whole = Int64(exactly: n) {
            appendInteger(whole, to: &out)
        } else {
            out.append(contentsOf: n.description.utf8)
        }
    }

    /// Decimal digits of `n` without a String in between.
    private static func appendInteger(_ n: Int64, to out: inout [UInt8]) {
        if n < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = n.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[19 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            out.append(contentsOf: buffer[(20 - count)...])
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    public static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x00..<0x20, 0x7F:
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30])
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
