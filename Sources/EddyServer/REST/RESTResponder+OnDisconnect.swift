// Firebase's onDisconnect over REST and SSE (the emulator set-up, where Firebase's own clients
// use a WebSocket): a client opens a presence connection and registers writes on it; when the
// connection ends, eddyd makes them (see `OnDisconnectSessions` for the invariants).
//
//   GET  /.ondisconnect.json  (Accept: text/event-stream)
//        opens a connection: the answer carries `X-Eddy-Connection: <id>` and starts with
//        `event: connection` / `data: {"id": "<id>"}`; keep-alive events follow. It lasts until
//        the client closes it (or is killed, or its network drops) or eddyd stops; then the
//        connection's writes run as one change (`OnDisconnectRuns`), with the rules checked for
//        the identity that registered them, on the data as it is then.
//   POST /.ondisconnect/<id>.json?ns=NAME  with `{"op": "set"|"update"|"remove", "path", "value"}`
//        registers a write (validated at once: a bad key or path is refused with 400 naming it,
//        and a write the rules deny now with 401, as Firebase checks an onDisconnect write when
//        it is registered; nothing is registered then); answers `null`. Nothing is written yet.
//   POST /.ondisconnect/<id>.json?ns=NAME  with `{"op": "cancel", "path"}`
//        forgets the path (the writes at or below it, and what lies there in a write above
//        it); answers `{"cancelled": n}`, the writes that went.
//
// Bounds: 1,000 writes or 16 MiB per connection (400), 256 MiB across all connections, HTTP and
// native (503). An id that is not open (its connection ended) is 404. On a cluster's follower every
// `/.ondisconnect` request is redirected (307) to the leader, as writes are.

import EddyEngine
import EddyModel
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle

extension RESTResponder {
    static let connectionHeader = HTTPField.Name("X-Eddy-Connection")!

    func onDisconnect(
        _ rest: RESTRequest, request: Request, identity: Authenticator.Identity, engine: Engine, channel: any Channel
    ) async throws -> Response {
        guard let id = rest.onDisconnectSession else {
            guard rest.method == .get, Self.wantsEventStream(request.headers) else {
                throw RESTError(
                    status: 400,
                    message: "open an onDisconnect connection with GET /.ondisconnect.json and Accept: text/event-stream; register writes with POST /.ondisconnect/<id>.json")
            }
            return try self.openOnDisconnectConnection(connectionEnded: await ConnectionEndWatcher.ended(of: channel))
        }
        guard rest.method == .post else {
            throw RESTError(
                status: 405,
                message: "register onDisconnect writes with POST /.ondisconnect/\(id).json and a body {\"op\": \"set\"|\"update\"|\"remove\"|\"cancel\", \"path\": ..., \"value\": ...}")
        }
        let answer: Value = try await self.withBody(request) { body in
            do throws(EddyError) {
                guard body.readableBytes > 0 else { throw EddyError(.invalidJSON, "request body is empty; send {\"op\", \"path\", \"value\"}") }
                let payload = try JSONParser.parse(Array(body.readableBytesView))
                guard case .object = payload else {
                    throw EddyError(.invalidArgument, "an onDisconnect registration is an object {\"op\", \"path\", \"value\"}, not \(JSONWriter.string(payload))")
                }
                if payload["op"] == .string("cancel") {
                    let cancelled = try self.onDisconnectSessions.cancel(
                        session: id, namespace: rest.namespace, at: try NativeConnection.path(payload), budget: self.onDisconnectRuns.budget)
                    return .object(["cancelled": .number(Double(cancelled))])
                }
                let operation = try NativeConnection.operation(payload, request: "onDisconnect", allowsPush: false)
                let write = try OnDisconnectList.write(operation, namespace: rest.namespace, access: identity.access)
                // Checked under the rules now, as Firebase does at registration (401 when denied);
                // again when it runs.
                let access = identity.access
                if !access.isAdmin { try await engine.onReaderPublic { () throws(EddyError) in try engine.checkWrite(operation, access) } }
                try self.onDisconnectSessions.register(write, session: id, budget: self.onDisconnectRuns.budget)
                return .null
            } catch {
                throw RESTError(error)
            }
        }
        let headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: JSONWriter.bytes(answer))))
    }

    private func openOnDisconnectConnection(connectionEnded: EventLoopFuture<Void>) throws -> Response {
        let sessions = self.onDisconnectSessions
        let id: String
        do {
            id = try sessions.open()
        } catch {
            throw RESTError(error)
        }
        let runs = self.onDisconnectRuns
        let data = self.data
        let logger = self.logger
        let keepAlive = self.keepAliveSeconds
        // Runs the writes once, whichever comes first: the client's side ending, or the answer
        // ending (eddyd stopping ends it before its connection closes).
        let end: @Sendable () -> Void = { runs.run(sessions.close(id, budget: runs.budget), data: data, logger: logger) }
        connectionEnded.whenComplete { _ in end() }
        let headers: HTTPFields = [
            .contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-cache", Self.connectionHeader: id,
        ]
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                // One element per keep-alive due; finished when the connection or eddyd ends it.
                let (ticks, tick) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
                connectionEnded.whenComplete { _ in tick.finish() }
                let timer = Task {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(keepAlive))
                        tick.yield()
                    }
                }
                defer {
                    timer.cancel()
                    tick.finish()
                    end()
                }
                try await withGracefulShutdownHandler {
                    try await writer.write(ByteBuffer(bytes: SSEFrames.frame(event: "connection", id: nil, data: JSONWriter.bytes(.object(["id": .string(id)])))))
                    for await _ in ticks { try await writer.write(ByteBuffer(bytes: SSEFrames.keepAlive)) }
                } onGracefulShutdown: {
                    tick.finish()
                }
                try await writer.finish(nil)
            })
    }
}
