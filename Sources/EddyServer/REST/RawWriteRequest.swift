// A strict reader of one HTTP/1.1 write request from raw bytes, for `RESTRawWriteHandler`: the
// head (request line and header fields) and the body's length, or word that the bytes so far
// are a prefix of such a request, or that they are not one it takes (then the request goes to
// NIO's HTTP parser and Hummingbird, which answer it as always, refusals included).
//
// It takes only the plainest form, so that whatever it takes NIO's parser would read the same
// way: a `PUT`, `POST` or `PATCH` (upper case) to an origin-form target of RFC 3986 path and
// query characters, version `HTTP/1.1`, CRLF line ends, field names of token characters
// followed at once by `:`, values of visible ASCII, spaces and tabs without trailing white
// space, exactly one `Content-Length` of decimal digits no larger than `bodyBytesMax`, at most
// one `Host`, no `Transfer-Encoding` or `Upgrade`, at most `fieldsMax` fields and
// `headBytesMax` bytes of head (well inside Hummingbird's decoder limits: 80 KiB, 1000
// fields). Anything else is `notTaken`, never an error.
//
// The head it makes is the one NIO's codec and `HTTP1ToHTTPServerCodec` make of the same bytes:
// the first `Host` becomes the authority and leaves the fields, the target is the path, every
// other field keeps its order, name (as sent) and value.

import HTTPTypes
import NIOCore

enum RawWriteRequest {
    /// The bytes begin with a whole request: its head, then `bodyBytes` of body, `headBytes` +
    /// `bodyBytes` bytes in all.
    case complete(head: HTTPRequest, headBytes: Int, bodyBytes: Int)
    /// The bytes so far may begin such a request; more are needed to tell.
    case incomplete
    /// Not a request this reader takes.
    case notTaken

    /// The longest head taken, request line included.
    static let headBytesMax = 8 << 10
    /// The most header fields taken.
    static let fieldsMax = 64

    /// Reads the request at the start of `buffer`'s readable bytes (nothing is consumed).
    static func read(_ buffer: ByteBuffer, bodyBytesMax: Int) -> RawWriteRequest {
        buffer.withUnsafeReadableBytes { bytes in Self.read(bytes, bodyBytesMax: bodyBytesMax) }
    }

    private static let cr = UInt8(ascii: "\r")
    private static let lf = UInt8(ascii: "\n")
    private static let space = UInt8(ascii: " ")
    private static let tab = UInt8(ascii: "\t")
    private static let version = Array("HTTP/1.1".utf8)

    static func read(_ bytes: UnsafeRawBufferPointer, bodyBytesMax: Int) -> RawWriteRequest {
        // The method decides at once: a GET or anything else goes to the parser unread.
        let method: HTTPRequest.Method
        let methodBytes: Int
        if Self.begins(bytes, with: "PUT ") {
            (method, methodBytes) = (.put, 3)
        } else if Self.begins(bytes, with: "POST ") {
            (method, methodBytes) = (.post, 4)
        } else if Self.begins(bytes, with: "PATCH ") {
            (method, methodBytes) = (.patch, 5)
        } else {
            // A prefix of one of them may still become one.
            for word in ["PUT ", "POST ", "PATCH "] where bytes.count < word.utf8.count && word.utf8.starts(with: bytes) {
                return .incomplete
            }
            return .notTaken
        }
        // The head's end: the first empty line, within `headBytesMax`.
        let searched = min(bytes.count, Self.headBytesMax)
        var end = -1
        var i = methodBytes
        while i + 3 < searched {
            if bytes[i] == Self.cr, bytes[i + 1] == Self.lf, bytes[i + 2] == Self.cr, bytes[i + 3] == Self.lf {
                end = i
                break
            }
            i += 1
        }
        guard end >= 0 else { return bytes.count >= Self.headBytesMax ? .notTaken : .incomplete }
        let headBytes = end + 4

        // Request line: METHOD SP target SP HTTP/1.1 CRLF.
        var position = methodBytes + 1
        let targetStart = position
        while position < end, bytes[position] != Self.space {
            guard Self.isTargetByte(bytes[position]) else { return .notTaken }
            position += 1
        }
        guard position > targetStart, bytes[targetStart] == UInt8(ascii: "/"), position < end else { return .notTaken }
        let target = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[targetStart..<position]), as: UTF8.self)
        position += 1
        guard position + Self.version.count + 2 <= end + 2,
            Self.version.indices.allSatisfy({ bytes[position + $0] == Self.version[$0] }),
            bytes[position + Self.version.count] == Self.cr, bytes[position + Self.version.count + 1] == Self.lf
        else { return .notTaken }
        position += Self.version.count + 2

        // Fields, up to the empty line at `end` (or none: the request line ends at `end`).
        var fields = HTTPFields()
        var authority: String?
        var hosts = 0
        var length: Int?
        var count = 0
        while position < end {
            count += 1
            guard count <= Self.fieldsMax else { return .notTaken }
            let nameStart = position
            while position < end, Self.isToken(bytes[position]) { position += 1 }
            guard position > nameStart, position < end, bytes[position] == UInt8(ascii: ":") else { return .notTaken }
            let nameEnd = position
            position += 1
            while position < end, bytes[position] == Self.space || bytes[position] == Self.tab { position += 1 }
            let valueStart = position
            while position < end + 2, bytes[position] != Self.cr {
                let byte = bytes[position]
                guard byte == Self.tab || (byte >= 0x20 && byte < 0x7F) else { return .notTaken }
                position += 1
            }
            // The line ends in CRLF (the head's last line at `end`, whose CRLF is the first half
            // of the empty line's search pattern).
            guard position <= end, bytes[position + 1] == Self.lf else { return .notTaken }
            let valueEnd = position
            if valueEnd > valueStart, bytes[valueEnd - 1] == Self.space || bytes[valueEnd - 1] == Self.tab { return .notTaken }
            position += 2
            let nameBytes = UnsafeRawBufferPointer(rebasing: bytes[nameStart..<nameEnd])
            let value = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[valueStart..<valueEnd]), as: UTF8.self)
            if Self.equalsLowercased(nameBytes, "content-length") {
                guard length == nil, valueEnd > valueStart, valueEnd - valueStart <= 7,
                    bytes[valueStart..<valueEnd].allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                    let value = Int(value), value <= bodyBytesMax
                else { return .notTaken }
                length = value
            } else if Self.equalsLowercased(nameBytes, "transfer-encoding") || Self.equalsLowercased(nameBytes, "upgrade") {
                return .notTaken
            } else if Self.equalsLowercased(nameBytes, "host") {
                hosts += 1
                guard hosts == 1 else { return .notTaken }
                authority = value
                continue
            }
            guard let name = HTTPField.Name(String(decoding: nameBytes, as: UTF8.self)) else { return .notTaken }
            fields.append(HTTPField(name: name, value: value))
        }
        guard let length else { return .notTaken }
        guard bytes.count >= headBytes + length else { return .incomplete }
        let head = HTTPRequest(method: method, scheme: "http", authority: authority, path: target, headerFields: fields)
        return .complete(head: head, headBytes: headBytes, bodyBytes: length)
    }

    private static func begins(_ bytes: UnsafeRawBufferPointer, with word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard bytes.count >= count else { return false }
        let start = word.utf8Start
        for i in 0..<count where bytes[i] != start[i] { return false }
        return true
    }

    /// A byte of a target of RFC 3986 path and query characters (`pchar`, `/`, `?`, `%`): what
    /// every HTTP parser takes unescaped.
    private static func isTargetByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "!"), UInt8(ascii: "$"),
            UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"),
            UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"),
            UInt8(ascii: "?"), UInt8(ascii: "%"):
            return true
        default:
            return false
        }
    }

    /// RFC 9110 `tchar`.
    private static func isToken(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Whether `bytes`, lower-cased, are `lowercased` (ASCII).
    private static func equalsLowercased(_ bytes: UnsafeRawBufferPointer, _ lowercased: StaticString) -> Bool {
        guard bytes.count == lowercased.utf8CodeUnitCount else { return false }
        let start = lowercased.utf8Start
        for i in 0..<bytes.count where bytes[i] | 0x20 != start[i] { return false }
        return true
    }
}
