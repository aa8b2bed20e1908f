// The HTTP listener's connections: HTTP/1.1 (Hummingbird's `HTTP1Channel`), or the native
// protocol (EddyProtocol/Frame.swift) when the connection's first byte says so. A native frame
// begins with its length as u32be, at most `Frame.bytesMax` (16 MiB), so its first byte is 0x00
// or 0x01; an HTTP request begins with a method's upper-case letter. So the Swift client's
// `http://host:port` URLs and `useEmulator(withHost:port:)` reach the native protocol on the
// port Firebase's emulator uses, one ordered connection as in Firebase's SDKs, and fall back
// to REST and SSE where no eddyd answers natively (a proxy, say).
//
// Invariants: `setup` completes at once (NIO registers the channel only after it), so the
// choice is made in the pipeline by `ProtocolSniffer` at the first bytes, and `handle` waits
// for it. Nothing is read past the first buffer before the choice: the sniffer configures the
// pipeline for one protocol, then passes that buffer on and leaves. A connection that sends
// nothing closes after the idle timeout; one that closes (or half-closes) first, or a stop,
// ends the wait and closes at once.
// Native connections here have the same bounds, authentication and rules as on the native
// listeners; they close when the client's side ends (this listener allows half-closure, so that
// comes as an event) and at a graceful stop (`ChannelShouldQuiesceEvent`), after which the Unix
// listener's stop waits for their onDisconnect writes (`OnDisconnectRuns`).

import HummingbirdCore
import Logging
import NIOCore

struct HTTPOrNativeChannel: ServerChildChannel {
    enum Spoken: Sendable {
        case http(HTTP1Channel.Value)
        case native
    }

    struct Value: ServerChildChannelValue {
        let channel: any Channel
        /// Fulfilled at the connection's first bytes; fails when it closes before them.
        let chosen: EventLoopFuture<Spoken>
    }

    let http: HTTP1Channel
    let native: NativeConnectionSetup
    /// A connection that sends nothing for this long closes (the HTTP idle timeout).
    let silenceSeconds: Int64

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let promise = channel.eventLoop.makePromise(of: Spoken.self)
            try channel.pipeline.syncOperations.addHandler(
                ProtocolSniffer(http: self.http, native: self.native, silenceSeconds: self.silenceSeconds, chosen: promise, logger: logger))
            return Value(channel: channel, chosen: promise.futureResult)
        }
    }

    func handle(value: Value, logger: Logger) async {
        guard let chosen = try? await value.chosen.get() else { return }
        switch chosen {
        case .http(let asyncChannel):
            await self.http.handle(value: asyncChannel, logger: logger)
        case .native:
            // The native connection runs on its handlers; the server counts it until it closes.
            try? await value.channel.closeFuture.get()
        }
    }
}

/// Looks at a connection's first bytes, sets its pipeline up for HTTP or the native protocol,
/// passes those bytes on and removes itself.
final class ProtocolSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let http: HTTP1Channel
    private let native: NativeConnectionSetup
    private let silenceSeconds: Int64
    private let chosen: EventLoopPromise<HTTPOrNativeChannel.Spoken>
    private let logger: Logger
    private var decided = false
    private var silence: Scheduled<Void>?

    init(
        http: HTTP1Channel, native: NativeConnectionSetup, silenceSeconds: Int64, chosen: EventLoopPromise<HTTPOrNativeChannel.Spoken>,
        logger: Logger
    ) {
        self.http = http
        self.native = native
        self.silenceSeconds = silenceSeconds
        self.chosen = chosen
        self.logger = logger
    }

    /// The first byte of a native frame: the top byte of a length of at most 16 MiB.
    static func isNative(firstByte: UInt8) -> Bool { firstByte <= 0x01 }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        self.silence = context.eventLoop.scheduleTask(in: .seconds(self.silenceSeconds)) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.silence?.cancel()
        if !self.decided { self.chosen.fail(ChannelError.inputClosed) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = self.unwrapInboundIn(data)
        guard !self.decided else {
            context.fireChannelRead(data)
            return
        }
        guard let first = buffer.readableBytesView.first else { return }
        self.decided = true
        self.silence?.cancel()
        do {
            if Self.isNative(firstByte: first) {
                try context.pipeline.syncOperations.addHandler(NativeOnHTTPPortHandler())
                try self.native.attach(to: context.channel)
                self.chosen.succeed(.native)
            } else {
                // HTTP1Channel's setup adds its handlers synchronously and wraps the channel.
                // (A fulfilled future runs a callback added on its loop at once.)
                var made: Result<HTTP1Channel.Value, any Error>?
                self.http.setup(channel: context.channel, logger: self.logger).assumeIsolated().whenComplete { made = $0 }
                guard let made else { throw ChannelError.inappropriateOperationForState }
                let value = try made.get()
                // HTTP/1.0 requests are answered as HTTP/1.0.
                try HTTP10ResponseHandler.install(in: context.pipeline.syncOperations)
                self.chosen.succeed(.http(value))
            }
        } catch {
            self.logger.debug("cannot set a connection up", metadata: ["error": "\(error)"])
            self.chosen.fail(error)
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !self.decided {
            self.decided = true
            self.silence?.cancel()
            self.chosen.fail(ChannelError.inputClosed)
        }
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A stop, or a client that closed its side before sending a byte (this listener allows
        // half-closure, so its FIN comes as an event, not as the channel going inactive):
        // nothing will choose a protocol, so the connection goes now, not at the idle timeout
        // (each such socket counted against --http-connections-max for 120 s).
        if !self.decided, event is ChannelShouldQuiesceEvent || (event as? ChannelEvent) == .inputClosed {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}

/// A native connection on the HTTP listener closes when the server stops gracefully (the native
/// listeners close theirs themselves), and when the client's side ends: the HTTP listener lets a
/// client half-close (its FIN comes as `inputClosed`), where the native listeners see the end.
final class NativeOnHTTPPortHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent || (event as? ChannelEvent) == .inputClosed {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
