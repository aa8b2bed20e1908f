// A REST answer built whole: status, headers and the body's bytes (nil: none). The responder
// hands it to Hummingbird as a `Response`; `RESTWriteAtOnceHandler` writes it as parts on the
// event loop and `RESTRawWriteHandler` as bytes, both with `headersAsSent`. One builder for all,
// so a write gets the same answer either way.

import HTTPTypes
import Hummingbird
import NIOCore

struct RESTAnswer: Sendable {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var body: ByteBuffer?

    /// The fields as Hummingbird sends a whole answer, for the handlers that write it
    /// themselves: its length (0 without a body), the date and the server's name.
    func headersAsSent(serverName: String) -> HTTPFields {
        var headers = self.headers
        if !headers.contains(.contentLength) { headers[.contentLength] = String(self.body?.readableBytes ?? 0) }
        headers[.date] = HTTPDate.now()
        headers[.server] = serverName
        return headers
    }

    /// As Hummingbird sends it: `Response` adds the Content-Length of the body (0 without one).
    var response: Response {
        Response(status: self.status, headers: self.headers, body: self.body.map { ResponseBody(byteBuffer: $0) } ?? ResponseBody())
    }
}
