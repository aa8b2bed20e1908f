// What a client is told when the HTTP parser refuses its request head: a status and a message
// saying what was wrong, where Hummingbird's own answer is a bare `400` with no body. The limits
// named are Hummingbird's defaults for `HTTP1Channel` (NIO's decoder enforces them).

import NIOHTTP1

struct HTTPHeadRefusal {
    /// The request line and headers together, and any one header field, at most this many bytes.
    static let headBytesMax = 80 * 1024
    /// Header fields in one request, at most.
    static let headerFieldsMax = 1000

    let status: Int
    let reasonPhrase: String
    let message: String

    init(_ error: HTTPParserError) {
        switch error {
        case .headerOverflow:
            self.status = 431
            self.reasonPhrase = "Request Header Fields Too Large"
            self.message =
                "the request head is too large: the request line and headers may hold at most \(Self.headBytesMax) bytes and \(Self.headerFieldsMax) header fields; send large values in the body"
        case .invalidVersion, .paused:
            // `paused`: the parser stops at HTTP/2's connection preface (`PRI * HTTP/2.0`). A 400,
            // not 505: a client's request is never answered 5xx here (5xx means a server fault),
            // and most of these are mangled versions (`HTTP/1.`, `HTTP/11.1`), not real ones.
            self.status = 400
            self.reasonPhrase = "Bad Request"
            self.message = "malformed HTTP request: its version is not HTTP/1.1 or HTTP/1.0 (eddyd does not speak HTTP/2 on this port)"
        case .invalidMethod:
            self.status = 400
            self.reasonPhrase = "Bad Request"
            self.message = "malformed HTTP request: unknown method (eddyd takes GET, PUT, POST, PATCH, DELETE and OPTIONS)"
        default:
            self.status = 400
            self.reasonPhrase = "Bad Request"
            self.message = "malformed HTTP request head: \(error.debugDescription)"
        }
    }
}
