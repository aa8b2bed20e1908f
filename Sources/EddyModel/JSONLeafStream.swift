// Reads a JSON document of any size as a stream of leaves, in document order, holding only the
// path down to the current value and the bytes of one token: `eddy import` of a multi-GiB
// Firebase export in bounded memory.
//
// Each non-null primitive becomes one leaf (its path from the document's root, its value);
// objects and arrays are walked, never built (an array's elements get keys "0", "1", ... as
// Firebase stores arrays); null and empty containers produce nothing (they are absent in
// Firebase). Every leaf carries the offset of the first byte after it, so a reader that stopped
// can resume by skipping the leaves that end at or before the offset it reached.
// Nesting deeper than `Limits.jsonDepthMax` is refused (nothing that deep can be written, and the
// walk recurses once per level). Errors name the byte offset. Strings and numbers are decoded by
// `JSONParser` (the same rules as every other JSON Eddy reads).

public struct JSONLeafStream {
    /// Fills the buffer with up to its count bytes; returns how many (0 at the end).
    public typealias Read = (UnsafeMutableRawBufferPointer) throws -> Int

    private let read: Read
    private var buffer: [UInt8] = []
    private var position = 0  // in `buffer`
    private var consumed = 0  // bytes of the input before `buffer[0]`
    private var atEnd = false
    private let chunkBytes: Int

    public init(chunkBytes: Int = 1 << 20, read: @escaping Read) {
        self.chunkBytes = chunkBytes
        self.read = read
    }

    /// The input's offset of the next unread byte.
    public var offset: Int { self.consumed + self.position }

    /// Calls `leaf` for every leaf, in order. `leaf` returns false to stop early.
    public mutating func forEachLeaf(_ leaf: (_ path: [String], _ value: Value, _ endOffset: Int) throws -> Bool) throws {
        var path: [String] = []
        try self.skipBlanks()
        guard try self.peek() != nil else { throw EddyError(.invalidJSON, "the input is empty: expected a JSON value") }
        _ = try self.value(&path, leaf)
        try self.skipBlanks()
        if try self.peek() != nil { throw self.error("unexpected data after the JSON value") }
    }

    /// Walks one value; false when `leaf` asked to stop.
    private mutating func value(_ path: inout [String], _ leaf: (_ path: [String], _ value: Value, _ endOffset: Int) throws -> Bool) throws -> Bool {
        guard let byte = try self.peek() else { throw self.error("unexpected end of input: expected a value") }
        if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "["), path.count >= Limits.jsonDepthMax {
            throw self.error("the JSON nests deeper than \(Limits.jsonDepthMax) levels (jsonDepthMax; a path is at most \(Limits.pathDepthMax) keys deep)")
        }
        switch byte {
        case UInt8(ascii: "{"):
            self.position += 1
            try self.skipBlanks()
            if try self.peek() == UInt8(ascii: "}") {
                self.position += 1
                return true
            }
            while true {
                try self.skipBlanks()
                guard try self.peek() == UInt8(ascii: "\"") else { throw self.error("expected a string key") }
                guard case .string(let key) = try self.scalar() else { throw self.error("expected a string key") }
                try self.skipBlanks()
                guard try self.peek() == UInt8(ascii: ":") else { throw self.error("expected ':' after the key \"\(key)\"") }
                self.position += 1
                try self.skipBlanks()
                path.append(key)
                let go = try self.value(&path, leaf)
                path.removeLast()
                if !go { return false }
                try self.skipBlanks()
                switch try self.peek() {
                case UInt8(ascii: ","): self.position += 1
                case UInt8(ascii: "}"):
                    self.position += 1
                    return true
                default: throw self.error("expected ',' or '}' in an object")
                }
            }
        case UInt8(ascii: "["):
            self.position += 1
            try self.skipBlanks()
            if try self.peek() == UInt8(ascii: "]") {
                self.position += 1
                return true
            }
            var index = 0
            while true {
                try self.skipBlanks()
                path.append(String(index))
                let go = try self.value(&path, leaf)
                path.removeLast()
                if !go { return false }
                index += 1
                try self.skipBlanks()
                switch try self.peek() {
                case UInt8(ascii: ","): self.position += 1
                case UInt8(ascii: "]"):
                    self.position += 1
                    return true
                default: throw self.error("expected ',' or ']' in an array")
                }
            }
        default:
            let value = try self.scalar()
            if value.isNull { return true }
            return try leaf(path, value, self.offset)
        }
    }

    /// One string, number, true, false or null, decoded by JSONParser from its exact bytes.
    /// The token's bytes stay in the buffer from `position` (`fill` drops only bytes before it),
    /// so it is measured by its length, not by indices that a refill would shift.
    private mutating func scalar() throws -> Value {
        guard let first = try self.peek() else { throw self.error("unexpected end of input") }
        var length = 0
        if first == UInt8(ascii: "\"") {
            length = 1
            var escaped = false
            while true {
                while self.position + length >= self.buffer.count {
                    guard try self.fill() else { throw self.error("unterminated string") }
                }
                let byte = self.buffer[self.position + length]
                length += 1
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    break
                }
            }
        } else {
            while true {
                if self.position + length >= self.buffer.count, !(try self.fill()) { break }
                let byte = self.buffer[self.position + length]
                let scalarByte =
                    (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
                    || byte == UInt8(ascii: ".")
                guard scalarByte else { break }
                length += 1
            }
            guard length > 0 else { throw self.error("unexpected character \"\(String(decoding: [first], as: UTF8.self))\"") }
        }
        let value: Value
        do {
            value = try JSONParser.parse(self.buffer[self.position..<(self.position + length)])
        } catch {
            throw EddyError(.invalidJSON, "invalid JSON at byte \(self.offset): \(error.message)")
        }
        self.position += length
        return value
    }

    private mutating func skipBlanks() throws {
        while let byte = try self.peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { self.position += 1 }
    }

    private mutating func peek() throws -> UInt8? {
        while self.position >= self.buffer.count {
            guard try self.fill() else { return nil }
        }
        return self.buffer[self.position]
    }

    /// Drops consumed bytes and reads one more chunk; false at the end of the input.
    private mutating func fill() throws -> Bool {
        if self.atEnd { return false }
        if self.position > 0, self.position > self.buffer.count / 2 {
            self.buffer.removeFirst(self.position)
            self.consumed += self.position
            self.position = 0
        }
        let old = self.buffer.count
        self.buffer.append(contentsOf: repeatElement(0, count: self.chunkBytes))
        let count = try self.buffer.withUnsafeMutableBytes { bytes in
            try self.read(UnsafeMutableRawBufferPointer(rebasing: bytes[old...]))
        }
        self.buffer.removeLast(self.chunkBytes - count)
        if count == 0 { self.atEnd = true }
        return count > 0
    }

    private func error(_ message: String) -> EddyError {
        EddyError(.invalidJSON, "invalid JSON at byte \(self.offset): \(message)")
    }
}
