// `GET` with `Accept: text/event-stream`: Firebase's REST streaming. The listener is attached
// before the response starts; its batches travel through a bounded `EventBuffer` to the task
// writing the response (see `SSEFrames` for the format).
//
// `format=export`: the stream in Firebase's export form, as a native subscription with
// `"priorities": true` (`.priority` members; a priority-only write is a put at
// `<node>/.priority`).
//
// Resuming: with `Last-Event-ID: <log id>` (what EventSource clients send on reconnect) a stream
// starts with what happened after that id instead of a full put: a query-less stream gets each
// logged entry's changes, read from the log page by page (`replayPageEntries` at a time) and
// written before any live event, while its listener, attached after the last of them, buffers
// the live ones; a query stream gets the changes of its result, which the engine derives by
// rebuilding the state at that id. An id the log cannot answer (unknown, pruned, newer than
// every entry) gets the full put. A client that falls more than `EventBuffer` allows
// behind gets `cancel` (its reason, in a comment line, names the last id it was sent), and the
// connection ends; reconnecting with that id resumes without a gap.
// Memory: a stream's events count in the shared budget (`--stream-buffers-bytes-total`) while
// they wait in its `EventBuffer`, and a large write's bytes until the socket has taken them
// (`send`); a client that leaves such a write unread while the budget is full is disconnected
// (`StalledReaderWatch`). A stream opened while the budget is full is refused (503).
// The stream ends at server shutdown (graceful shutdown handler) or when the client goes away:
// at once when its side of the connection ends (`ConnectionEndWatcher`: its FIN, a reset), else
// at the next write that fails, so a client that closed does not keep a listener until then.
//
// Access: a client the rules do not let read the location is refused before the stream starts,
// `401 {"error": "Permission denied"}` as a denied GET (firebase-admin's `listen()` then raises
// `UnauthenticatedError`; an EventSource reports an error); a stream whose read the rules stop
// allowing (a rules change) gets `cancel` (data `null`, as Firebase's docs say, the reason
// "Permission denied" in a comment line); a stream opened with an ID token gets `auth_revoked` when the token
// expires (reconnect with a fresh one), as Firebase's REST streaming does, and a stream opened
// with any credential gets it when a reload (SIGHUP) of the keys and secrets leaves that
// credential invalid.

import Foundation
import EddyEngine
import EddyModel
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle
import Synchronization

extension RESTResponder {
    static let lastEventID = HTTPField.Name("Last-Event-ID")!

    static func wantsEventStream(_ headers: HTTPFields) -> Bool {
        headers[.accept]?.lowercased().contains("text/event-stream") == true
    }

    func stream(
        _ rest: RESTRequest, engine: Engine, headers: HTTPFields, identity: Authenticator.Identity, channel: any Channel
    ) async throws -> Response {
        let access = identity.access
        guard !rest.shallow else { throw RESTError(status: 400, message: "shallow=true cannot be streamed; listen without it") }
        guard rest.callback == nil else { throw RESTError(status: 400, message: "callback= (JSONP) cannot be streamed; listen without it") }
        let budgetFull = RESTError(
            status: 503,
            message:
                "too many bytes are waiting for slow readers: all streams together hold stream-buffers-bytes-total (\(self.streamBudget.bytesMax) bytes); retry shortly (see --stream-buffers-bytes-total)"
        )
        guard !self.streamBudget.isFull else { throw budgetFull }
        let buffer = EventBuffer(batchesMax: self.streamBufferBatches, bytesMax: self.streamBufferBytes, budget: self.streamBudget)
        let attachment: ListenerAttachment
        let sink: ChildEventSink = { buffer.push($0) }
        // Set when this stream replays the log after that id itself (a query-less resume).
        var replayAfter: LogID? = nil
        do {
            // An id the engine cannot resume after (unknown, pruned, newer than every entry),
            // or a reader the log may not be replayed to (`mayReplayLog`), gets the full put instead.
            if let since = headers[Self.lastEventID].flatMap(LogID.init), (try? engine.canResume(after: since)) == true,
                engine.mayReplayLog(at: rest.path, access),
                let resumed = try? await engine.listen(
                    rest.path, query: rest.query, since: since, replaySince: rest.query != nil, selection: .valueChangesOnly, access: access,
                    exportsPriorities: rest.export, sink: sink)
            {
                attachment = resumed
                if rest.query == nil { replayAfter = since }
            } else {
                attachment = try await engine.listen(
                    rest.path, query: rest.query, selection: .valueChangesOnly, access: access, exportsPriorities: rest.export, sink: sink)
            }
        } catch {
            throw RESTError(error)
        }
        // The budget filled while it attached: its first value (handed over at attach) found
        // no room.
        if buffer.refusedItsFirstBatch {
            await engine.removeListener(attachment.id)
            throw budgetFull
        }
        let replayFrom = replayAfter
        let keepAlive = self.keepAliveSeconds
        let expires = identity.expires
        let revoked = RevocationFlag()
        // A stream opened with a credential is revoked when a reload of the keys and secrets
        // (SIGHUP) leaves that credential invalid.
        let credential = Self.credential(headers) ?? rest.credential
        let authenticator = self.authenticator
        let initialPuts = self.initialPuts
        let budget = self.streamBudget
        let reloadObserver: UInt64? =
            credential == nil && rest.authOverride == nil
            ? nil
            : authenticator.onReload { [override = rest.authOverride] in
                Task {
                    guard await !authenticator.stillValid(credential: credential, override: override) else { return }
                    revoked.set()
                    buffer.pushKeepAlive()
                }
            }
        // The client going ends the stream, and its listener goes even if the body never runs
        // (Hummingbird does not run it when writing the head fails on a closed connection).
        let clientEnded = await ConnectionEndWatcher.ended(of: channel)
        clientEnded.whenComplete { _ in
            buffer.finish()
            if let reloadObserver { authenticator.removeReloadObserver(reloadObserver) }
            Task { await engine.removeListener(attachment.id) }
        }
        let headers: HTTPFields = [.contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-cache"]
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                let timer = Task {
                    while !Task.isCancelled {
                        var pause = Double(keepAlive)
                        if let expires {
                            let left = expires.timeIntervalSinceNow
                            if left <= 0 {
                                revoked.set()
                                buffer.pushKeepAlive()
                                return
                            }
                            pause = min(pause, left)
                        }
                        try? await Task.sleep(for: .seconds(pause))
                        if expires.map({ $0.timeIntervalSinceNow > 0 }) ?? true { buffer.pushKeepAlive() }
                    }
                }
                ServerMetrics.subscribed(.sse)
                defer {
                    if let reloadObserver { authenticator.removeReloadObserver(reloadObserver) }
                    timer.cancel()
                    buffer.finish()
                    ServerMetrics.unsubscribed(.sse)
                }
                do {
                    try await withGracefulShutdownHandler {
                        if let replayFrom, let liveAfter = attachment.liveAfter {
                            try await Self.replay(
                                after: replayFrom, upTo: liveAfter, at: rest.path, export: rest.export, engine: engine, writer: &writer,
                                channel: channel, budget: budget)
                        }
                        var first = true
                        loop: while let item = await buffer.next() {
                            switch item {
                            case .events(let events):
                                if first, events.allSatisfy({ $0.logID == nil && $0.kind != .cancel }) {
                                    // The attach batch (a resumed stream has none): the whole value.
                                    first = false
                                    let key = attachment.liveAfter.map {
                                        InitialPutCache.Key(namespace: rest.namespace, location: rest.path, query: rest.query, export: rest.export, liveAfter: $0)
                                    }
                                    let bytes = initialPuts.frame(for: key) {
                                        SSEFrames.put(path: "/", data: JSONWriter.bytes(events.last?.value ?? .null), id: attachment.liveAfter)
                                    }
                                    try await Self.send(bytes, writer: &writer, channel: channel, budget: budget)
                                } else if let cancel = events.first(where: { $0.kind == .cancel }) {
                                    first = false
                                    guard case .string(let reason) = cancel.value else { break loop }
                                    try await writer.write(ByteBuffer(bytes: SSEFrames.cancel(reason)))
                                    break loop
                                } else {
                                    first = false
                                    ServerMetrics.delivered(.sse, events: events.count)
                                    let bytes = SSEFrames.frames(for: events)
                                    if !bytes.isEmpty { try await Self.send(bytes, writer: &writer, channel: channel, budget: budget) }
                                }
                            case .keepAlive:
                                if revoked.isSet {
                                    try await writer.write(ByteBuffer(bytes: SSEFrames.authRevoked))
                                    break loop
                                }
                                try await writer.write(ByteBuffer(bytes: SSEFrames.keepAlive))
                            case .overflow(let last, let bound):
                                ServerMetrics.disconnectedForLag(.sse)
                                let behind: String
                                switch bound {
                                case .batches: behind = "fell more than \(buffer.batchesMax) entries behind (--stream-buffer-batches)"
                                case .bytes: behind = "had more than \(buffer.bytesMax) bytes of events waiting for the client (--stream-buffer-bytes)"
                                case .shared: behind = "needed more memory than all streams together may hold (--stream-buffers-bytes-total)"
                                }
                                let reason =
                                    "the stream \(behind); reconnect with Last-Event-ID: \(last?.rawValue ?? attachment.liveAfter?.rawValue ?? "") to resume"
                                try await writer.write(ByteBuffer(bytes: SSEFrames.cancel(reason)))
                                break loop
                            }
                        }
                    } onGracefulShutdown: {
                        buffer.finish()
                    }
                } catch {
                    await engine.removeListener(attachment.id)
                    throw error
                }
                await engine.removeListener(attachment.id)
                try await writer.finish(nil)
            })
    }

    /// Writes `bytes` to a stream. A write of `StalledReaderWatch.bytesMin` or more counts in
    /// `budget` until the socket has taken it (beyond the channel's low-water mark), and the
    /// client is disconnected if it leaves it unread while the budget is full
    /// (`StalledReaderWatch`); smaller ones the socket's buffers take.
    static func send(_ bytes: [UInt8], writer: inout some ResponseBodyWriter, channel: any Channel, budget: MemoryBudget) async throws {
        try await writer.write(ByteBuffer(bytes: bytes))
        guard bytes.count >= StalledReaderWatch.bytesMin else { return }
        _ = budget.reserve(bytes.count, evenPast: true)  // already in memory: counted, never refused
        defer { budget.release(bytes.count) }
        let watch = StalledReaderWatch(channel: channel, budget: budget) { ServerMetrics.disconnectedForLag(.sse) }
        defer { watch.stop() }
        // The writer hands the bytes to the event loop and returns: once the loop has written
        // them (a task queued after theirs has run), the channel's writability says whether
        // they wait for the client, and the writer suspends an empty write until it is
        // writable again (NIOAsyncWriter). The HTTP encoder writes no chunk for an empty write.
        try await channel.eventLoop.submit {}.get()
        try await writer.write(ByteBuffer())
    }

    /// Log entries read per page when a stream replays what a reconnecting client missed.
    static let replayPageEntries = 256

    /// Writes the frames of the entries after `since` up to `liveAfter`, a page at a time
    /// (the socket's backpressure paces the reads). Entries up to `liveAfter` may still be
    /// syncing when the stream starts; an empty page before `liveAfter` waits for them.
    static func replay(
        after since: LogID, upTo liveAfter: LogID, at location: Path, export: Bool, engine: Engine, writer: inout some ResponseBodyWriter,
        channel: any Channel, budget: MemoryBudget
    ) async throws {
        var cursor = since
        var waitedMilliseconds = 0
        while cursor < liveAfter {
            let entries = try await engine.logEntries(after: cursor, limit: Self.replayPageEntries)
            guard let last = entries.last else {
                // Acknowledged (durable) entries only: wait for the group that holds `liveAfter`.
                guard waitedMilliseconds < 10_000 else {
                    throw EddyError(.unavailable, "log entries up to \(liveAfter) did not become durable within 10 s")
                }
                try await Task.sleep(for: .milliseconds(1))
                waitedMilliseconds += 1
                continue
            }
            var bytes: [UInt8] = []
            for entry in entries where !(liveAfter < entry.id) {
                bytes += SSEFrames.frames(for: export ? entry.exportValueChanges(at: location) : entry.valueChanges(at: location), id: entry.id)
            }
            if !bytes.isEmpty { try await Self.send(bytes, writer: &writer, channel: channel, budget: budget) }
            cursor = last.id
        }
    }
}

/// Set once when a stream's credential expired (by its timer; read by its writer).
final class RevocationFlag: Sendable {
    private let flag = Mutex(false)
    var isSet: Bool { self.flag.withLock { $0 } }
    func set() { self.flag.withLock { $0 = true } }
}
