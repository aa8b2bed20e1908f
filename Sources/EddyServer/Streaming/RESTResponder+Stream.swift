// `GET` with `Accept: text/event-stream`: Firebase's REST streaming. The listener is attached
// before the response starts; its batches travel through a bounded `EventBuffer` to the task
// writing the response (see `SSEFrames` for the format).
//
// Resuming: with `Last-Event-ID: <log id>` (what EventSource clients send on reconnect) a stream
// starts with what happened after that id instead of a full put: a query-less stream gets the
// logged changes, a query stream the events of its result (the engine rebuilds the state at that
// id); an id the log cannot answer (unknown, newer than every entry) gets the full put. A client that falls more than `EventBuffer` allows behind gets `cancel` naming the last
// id it was sent, and the connection ends; reconnecting with that id resumes without a gap.
// The stream ends at server shutdown (graceful shutdown handler) or when the client goes away.

import EddyEngine
import EddyModel
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle

extension RESTResponder {
    static let lastEventID = HTTPField.Name("Last-Event-ID")!

    static func wantsEventStream(_ headers: HTTPFields) -> Bool {
        headers[.accept]?.lowercased().contains("text/event-stream") == true
    }

    func stream(_ rest: RESTRequest, engine: Engine, headers: HTTPFields) async throws -> Response {
        guard !rest.shallow else { throw RESTError(status: 400, message: "shallow=true cannot be streamed; listen without it") }
        let buffer = EventBuffer(batchesMax: self.streamBufferBatches)
        let attachment: ListenerAttachment
        // A query stream resumes through the engine (the events of every entry after the id);
        // a plain one replays the logged changes below. An id the engine cannot resume from
        // gets the full put.
        let resumeQueryAfter = rest.query == nil ? nil : headers[Self.lastEventID].flatMap(LogID.init)
        do {
            if let since = resumeQueryAfter,
                let resumed = try? await engine.listen(rest.path, query: rest.query, since: since, sink: { buffer.push($0) })
            {
                attachment = resumed
            } else {
                attachment = try await engine.listen(rest.path, query: rest.query, sink: { buffer.push($0) })
            }
        } catch {
            throw RESTError(error)
        }
        let replay: [UInt8]?
        do {
            replay = try self.replay(rest, engine: engine, after: headers[Self.lastEventID], upTo: attachment.liveAfter)
        } catch {
            await engine.removeListener(attachment.id)
            throw RESTError(error)
        }
        let keepAlive = self.keepAliveSeconds
        let headers: HTTPFields = [.contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-cache"]
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                let timer = Task {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(keepAlive))
                        buffer.pushKeepAlive()
                    }
                }
                defer {
                    timer.cancel()
                    buffer.finish()
                }
                do {
                    try await withGracefulShutdownHandler {
                        var first = true
                        loop: while let item = await buffer.next() {
                            switch item {
                            case .events(let events):
                                if first, events.allSatisfy({ $0.logID == nil && $0.kind != .cancel }) {
                                    // The attach batch (a resumed query stream has none).
                                    first = false
                                    let bytes =
                                        replay
                                        ?? SSEFrames.put(
                                            path: "/", data: JSONWriter.bytes(events.last?.value ?? .null), id: attachment.liveAfter)
                                    if !bytes.isEmpty { try await writer.write(ByteBuffer(bytes: bytes)) }
                                } else if let cancel = events.first(where: { $0.kind == .cancel }) {
                                    first = false
                                    guard case .string(let reason) = cancel.value else { break loop }
                                    try await writer.write(ByteBuffer(bytes: SSEFrames.cancel(reason)))
                                    break loop
                                } else {
                                    first = false
                                    try await writer.write(ByteBuffer(bytes: SSEFrames.frames(for: events)))
                                }
                            case .keepAlive:
                                try await writer.write(ByteBuffer(bytes: SSEFrames.keepAlive))
                            case .overflow(let last):
                                let reason =
                                    "the stream fell more than \(buffer.batchesMax) entries behind; reconnect with Last-Event-ID: \(last?.rawValue ?? attachment.liveAfter?.rawValue ?? "") to resume"
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

    /// The frames a reconnecting query-less stream missed (entries after `lastEventID` up to
    /// `liveAfter`), or nil when it gets a full put instead.
    private func replay(_ rest: RESTRequest, engine: Engine, after lastEventID: String?, upTo liveAfter: LogID?) throws(EddyError) -> [UInt8]? {
        guard rest.query == nil, let lastEventID, let since = LogID(lastEventID), let liveAfter, !(liveAfter < since),
            try engine.canResume(after: since)
        else {
            return nil
        }
        var out: [UInt8] = []
        var cursor = since
        while cursor < liveAfter {
            let entries = try engine.readLogEntries(after: cursor, limit: Limits.logReadCountMax)
            guard let last = entries.last else { break }
            for entry in entries where !(liveAfter < entry.id) { out += SSEFrames.frames(replaying: entry, at: rest.path) }
            cursor = last.id
        }
        return out
    }
}
