// A strict JSON parser (RFC 8259) from UTF-8 bytes to `Value`.
//
// - Validates UTF-8 and joins `\uD83D\uDE00` surrogate pairs; a lone surrogate is an error.
// - Arrays become objects keyed "0", "1", ... (Firebase stores arrays that way).
// - Nulls are kept (a PATCH uses them to delete); `Value.normalized()` prunes them.
// - Nesting is bounded by `Limits.jsonDepthMax`, so recursion depth is bounded.
// - Errors name the byte offset and what was expected.

public struct JSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0

    /// Parses a complete JSON document. Trailing non-whitespace is an error.
    public static func parse(_ data: some Collection<UInt8>) throws(EddyError) -> Value {
        let array = Array(data)
        do {
            return try array.withUnsafeBufferPointer { buffer in
                var parser = JSONParser(bytes: buffer)
                parser.skipWhitespace()
                let value = try parser.parseValue()
                parser.skipWhitespace()
                if parser.index != buffer.count {
                    throw parser.error("unexpected data after the JSON value")
                }
                return value
            }
        } catch let error as EddyError {
            throw error
        } catch {
            throw EddyError(.internal, "JSON parser failed: \(error)")
        }
    }

    /// Parses bytes in place (no copy), e.g. a stored index entry.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(EddyError) -> Value {
        let buffer = bytes.bindMemory(to: UInt8.self)
        var parser = JSONParser(bytes: buffer)
        parser.skipWhitespace()
        let value = try parser.parseValue()
        parser.skipWhitespace()
        if parser.index != buffer.count {
            throw parser.error("unexpected data after the JSON value")
        }
        return value
    }

    public static func parse(_ string: String) throws(EddyError) -> Value {
        try parse(Array(string.utf8))
    }

    /// Parses comma-separated JSON values (`3,"b"` for a query bound with a key tie-break).
    public static func parseList(_ string: String) throws(EddyError) -> [Value] {
        let array = Array(string.utf8)
        do {
            return try array.withUnsafeBufferPointer { buffer in
                var parser = JSONParser(bytes: buffer)
                var values: [Value] = []
                while true {
                    parser.skipWhitespace()
                    values.append(try parser.parseValue())
                    parser.skipWhitespace()
                    if parser.index == buffer.count { return values }
                    guard buffer[parser.index] == UInt8(ascii: ","), values.count < 2 else {
                        throw parser.error("expected at most two comma-separated JSON values")
                    }
                    parser.index += 1
                }
            }
        } catch let error as EddyError {
            throw error
        } catch {
            throw EddyError(.internal, "JSON parser failed: \(error)")
        }
    }

    private init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    private func error(_ what: String) -> EddyError {
        EddyError(.invalidJSON, "invalid JSON at byte \(self.index): \(what)")
    }

    private mutating func skipWhitespace() {
        while self.index < self.bytes.count {
            switch self.bytes[self.index] {
            case 0x20, 0x09, 0x0A, 0x0D: self.index += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(EddyError) -> Value {
        guard self.index < self.bytes.count else { throw self.error("unexpected end of input") }
        switch self.bytes[self.index] {
        case UInt8(ascii: "{"): return try self.parseObject()
        case UInt8(ascii: "["): return try self.parseArray()
        case UInt8(ascii: "\""): return .string(try self.parseString())
        case UInt8(ascii: "t"):
            try self.expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try self.expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try self.expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try self.parseNumber()
        default:
            throw self.error("unexpected character '\(Character(Unicode.Scalar(self.bytes[self.index])))'")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(EddyError) {
        let count = literal.utf8CodeUnitCount
        guard self.index + count <= self.bytes.count else { throw self.error("unexpected end of input") }
        let start = literal.utf8Start
        for offset in 0..<count where self.bytes[self.index + offset] != start[offset] {
            throw self.error("invalid literal, expected \(literal)")
        }
        self.index += count
    }

    private mutating func enter() throws(EddyError) {
        self.depth += 1
        if self.depth > Limits.jsonDepthMax {
            throw EddyError(
                .invalidJSON, "JSON nests deeper than \(Limits.jsonDepthMax) levels; paths may be at most \(Limits.pathDepthMax) keys deep")
        }
    }

    private mutating func parseObject() throws(EddyError) -> Value {
        try self.enter()
        defer { self.depth -= 1 }
        self.index += 1
        var children: [String: Value] = [:]
        self.skipWhitespace()
        if self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: "}") {
            self.index += 1
            return .object(children)
        }
        while true {
            self.skipWhitespace()
            guard self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: "\"") else {
                throw self.error("expected a string key")
            }
            let key = try self.parseString()
            self.skipWhitespace()
            guard self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: ":") else {
                throw self.error("expected ':' after key")
            }
            self.index += 1
            self.skipWhitespace()
            if let existing = children.index(forKey: key), !children[existing].key.utf8.elementsEqual(key.utf8) {
                // Swift merges canonically equivalent keys; a later NFC check could not see both.
                throw EddyError(
                    .invalidKey,
                    "object has keys \(children[existing].key.debugDescription) and \(key.debugDescription) that differ only in Unicode normalization; send keys in NFC")
            }
            children[key] = try self.parseValue()
            self.skipWhitespace()
            guard self.index < self.bytes.count else { throw self.error("unexpected end of input in object") }
            let byte = self.bytes[self.index]
            self.index += 1
            if byte == UInt8(ascii: "}") { return .object(children) }
            if byte != UInt8(ascii: ",") {
                self.index -= 1
                throw self.error("expected ',' or '}' in object")
            }
        }
    }

    private mutating func parseArray() throws(EddyError) -> Value {
        try self.enter()
        defer { self.depth -= 1 }
        self.index += 1
        var children: [String: Value] = [:]
        var position = 0
        self.skipWhitespace()
        if self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: "]") {
            self.index += 1
            return .object(children)
        }
        while true {
            self.skipWhitespace()
            children[String(position)] = try self.parseValue()
            position += 1
            self.skipWhitespace()
            guard self.index < self.bytes.count else { throw self.error("unexpected end of input in array") }
            let byte = self.bytes[self.index]
            self.index += 1
            if byte == UInt8(ascii: "]") { return .object(children) }
            if byte != UInt8(ascii: ",") {
                self.index -= 1
                throw self.error("expected ',' or ']' in array")
            }
        }
    }

    /// A number; an integer literal in Int64's range keeps every digit (`Value.integer`), as
    /// Firebase keeps 64-bit integers, where a Double would round those beyond 2^53.
    private mutating func parseNumber() throws(EddyError) -> Value {
        let start = self.index
        if self.bytes[self.index] == UInt8(ascii: "-") { self.index += 1 }
        let intStart = self.index
        while self.index < self.bytes.count, isDigit(self.bytes[self.index]) { self.index += 1 }
        let intDigits = self.index - intStart
        if intDigits == 0 { throw self.error("expected digits in number") }
        if intDigits > 1, self.bytes[intStart] == UInt8(ascii: "0") { throw self.error("leading zero in number") }
        if self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: ".") {
            self.index += 1
            let fracStart = self.index
            while self.index < self.bytes.count, isDigit(self.bytes[self.index]) { self.index += 1 }
            if self.index == fracStart { throw self.error("expected digits after '.'") }
        }
        if self.index < self.bytes.count, self.bytes[self.index] | 0x20 == UInt8(ascii: "e") {
            self.index += 1
            if self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: "+") || self.bytes[self.index] == UInt8(ascii: "-") {
                self.index += 1
            }
            let expStart = self.index
            while self.index < self.bytes.count, isDigit(self.bytes[self.index]) { self.index += 1 }
            if self.index == expStart { throw self.error("expected digits in exponent") }
        }
        // Integers of up to 15 digits are exact in a Double: no text conversion needed.
        if self.index - start == intDigits + (intStart - start), intDigits <= 15 {
            var magnitude = 0
            for i in intStart..<self.index { magnitude = magnitude * 10 + Int(self.bytes[i] - UInt8(ascii: "0")) }
            return .number(intStart > start ? -Double(magnitude) : Double(magnitude))
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: self.bytes[start..<self.index]), as: UTF8.self)
        if self.index - start == intDigits + (intStart - start), let whole = Int64(text) {
            return Value.integer(whole)
        }
        guard let value = Double(text) else { throw self.error("number \(text) cannot be represented") }
        guard value.isFinite else {
            throw EddyError(.invalidValue, "number \(text) is not finite; Firebase stores finite numbers only")
        }
        return .number(value)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func parseString() throws(EddyError) -> String {
        self.index += 1  // opening quote
        let start = self.index
        // Fast path: no escapes; validate UTF-8 with the standard library (ASCII needs none,
        // and the generic validating initializer is slow).
        var ascii = true
        while self.index < self.bytes.count {
            let byte = self.bytes[self.index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: self.bytes[start..<self.index])
                self.index += 1
                if ascii { return String(decoding: slice, as: UTF8.self) }
                guard let string = String(validating: slice, as: UTF8.self) else {
                    throw EddyError(.invalidJSON, "invalid UTF-8 in string starting at byte \(start)")
                }
                return string
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw self.error("unescaped control character in string") }
            if byte >= 0x80 { ascii = false }
            self.index += 1
        }
        var out = Array(UnsafeBufferPointer(rebasing: self.bytes[start..<self.index]))
        while self.index < self.bytes.count {
            let byte = self.bytes[self.index]
            switch byte {
            case UInt8(ascii: "\""):
                self.index += 1
                guard let string = String(validating: out, as: UTF8.self) else {
                    throw EddyError(.invalidJSON, "invalid UTF-8 in string starting at byte \(start)")
                }
                return string
            case UInt8(ascii: "\\"):
                self.index += 1
                guard self.index < self.bytes.count else { throw self.error("unterminated escape") }
                let escape = self.bytes[self.index]
                self.index += 1
                switch escape {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try self.parseHex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard self.index + 1 < self.bytes.count, self.bytes[self.index] == UInt8(ascii: "\\"),
                            self.bytes[self.index + 1] == UInt8(ascii: "u")
                        else { throw self.error("lone high surrogate \\u\(String(scalar, radix: 16))") }
                        self.index += 2
                        let low = try self.parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw self.error("invalid low surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw self.error("lone low surrogate \\u\(String(scalar, radix: 16))")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw self.error("invalid unicode escape") }
                    out.append(contentsOf: UTF8.encode(unicode)!)
                default:
                    throw self.error("invalid escape '\\\(Character(Unicode.Scalar(escape)))'")
                }
            default:
                if byte < 0x20 { throw self.error("unescaped control character in string") }
                out.append(byte)
                self.index += 1
            }
        }
        throw self.error("unterminated string")
    }

    private mutating func parseHex4() throws(EddyError) -> UInt32 {
        guard self.index + 4 <= self.bytes.count else { throw self.error("short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = self.bytes[self.index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw self.error("invalid hex digit in \\u escape")
            }
            value = value << 4 | digit
            self.index += 1
        }
        return value
    }
}
