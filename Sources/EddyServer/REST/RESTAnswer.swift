// A REST answer built whole: status, headers and the body's bytes (nil: none), which the
// responder hands to Hummingbird as a `Response`. Answers to writes and errors are built this
// way, so they can be written by other means than Hummingbird's with the same bytes.

import HTTPTypes
import Hummingbird
import NIOCore

struct RESTAnswer: Sendable {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var body: ByteBuffer?

    /// As Hummingbird sends it: `Response` adds the Content-Length of the body (0 without one).
    var response: Response {
        Response(status: self.status, headers: self.headers, body: self.body.map { ResponseBody(byteBuffer: $0) } ?? ResponseBody())
    }
}
