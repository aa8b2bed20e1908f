// What a native-protocol connection needs, shared by every connection of a listener: the
// native listeners (Unix socket, `--native-listen`) and the HTTP listener, which takes the
// native protocol too (`HTTPOrNativeChannel`). `attach` makes a channel a `NativeConnection`;
// the channels stay in `connections` until they close, so a stop can close them all.

import EddyEngine
import EddyReplication
import Logging
import NIOCore

struct NativeConnectionSetup: Sendable {
    let data: DataDirectory
    let outstandingMax: Int
    let outstandingBytesMax: Int
    let budget: MemoryBudget
    let replication: ReplicationRole
    let doorbells: CommitDoorbells
    let authenticator: Authenticator
    let onDisconnectRuns: OnDisconnectRuns
    var subscriptionBounds = SubscriptionBounds()
    /// The bounds on requests as they arrive, shared with HTTP request bodies.
    var frameIntake = FrameIntake()
    let logger: Logger
    /// Identical subscriptions of this listener's connections share one encoded payload.
    let payloads = EventsPayloadCache()
    /// The open connections, to close at a stop.
    let connections = OpenConnections()

    /// Makes `channel` a native connection: its frames are read by a `NativeFrameHandler`
    /// added at the end of its pipeline. Call on the channel's event loop.
    func attach(to channel: any Channel) throws {
        let connection = NativeConnection(
            channel: channel, data: self.data, outstandingMax: self.outstandingMax, outstandingBytesMax: self.outstandingBytesMax,
            budget: self.budget, payloads: self.payloads, replication: self.replication, doorbells: self.doorbells,
            authenticator: self.authenticator, onDisconnectRuns: self.onDisconnectRuns, subscriptionBounds: self.subscriptionBounds,
            logger: self.logger)
        let connections = self.connections
        connections.add(channel)
        channel.closeFuture.whenComplete { _ in
            connection.closed()  // first: a connection gone from the set has begun its onDisconnect writes
            connections.remove(channel)
        }
        try channel.pipeline.syncOperations.addHandler(NativeFrameHandler(connection: connection, intake: self.frameIntake))
    }
}
