// A REST answer built whole: status, headers and the body's bytes (nil: none). The responder
// hands it to Hummingbird as a `Response`; `RESTWriteAtOnceHandler` writes it as parts on the
// event loop. One builder for both, so a write gets the same answer either way.

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
