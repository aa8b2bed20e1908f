// Answers `Expect: 100-continue` (RFC 9110 §10.1.1), which curl sends with every body over
// 1 KiB and then waits up to a second for: without the interim `100 Continue`, each such
// write took a second longer than it should. A request whose `Content-Length` is over
// `--request-bytes-max` gets no 100: the responder refuses it with 400 at once, and the client
// never sends the body. Hummingbird does not do this itself; it sits after its HTTP codec.

import HTTPTypes
import NIOCore
import NIOHTTPTypes

final class ExpectContinueHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    let requestBytesMax: Int

    init(requestBytesMax: Int) {
        self.requestBytesMax = requestBytesMax
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let request) = self.unwrapInboundIn(data),
            let expect = request.headerFields[.expect], expect.lowercased() == "100-continue"
        {
            let declared = request.headerFields[.contentLength].flatMap { Int($0) }
            if declared.map({ $0 <= self.requestBytesMax }) ?? true {
                context.writeAndFlush(self.wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
            }
        }
        context.fireChannelRead(data)
    }
}
