// The request context of eddyd's HTTP listener: Hummingbird's basic context plus the request's
// channel, so a response that lives as long as its connection (an onDisconnect connection,
// `RESTResponder+OnDisconnect`) can learn at once that the client went (`ConnectionEndWatcher`),
// without waiting for its next write to fail.

import Hummingbird
import NIOCore

public struct EddyRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The connection that carried the request.
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }
}
