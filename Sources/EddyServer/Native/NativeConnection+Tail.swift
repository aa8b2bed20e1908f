// The native `tail` request: the change log as change-data-capture records (`LogEntry.
// changeRecords`), from after `since` (or the oldest entry kept), then live, woken by commits.
// Only durable entries are sent. `changes` frames count toward the connection's bound like
// `events` frames: a reader that falls too far behind gets `behind` with the last log id queued
// and can resume from it with `since`.

import EddyEngine
import EddyModel
import EddyProtocol
import EddyReplication
import Synchronization

extension NativeConnection {
    static let tailEntriesPerFrameMax = 512
    static let tailFrameBytesMax = 1 << 20

    /// Throws unless `access` may tail the log at `location` now.
    static func checkTail(_ location: Path, _ engine: Engine, _ access: Access) async throws(EddyError) {
        guard !access.isAdmin else { return }
        guard engine.mayReplayLog(at: location, access) else {
            throw EddyError(
                .permissionDenied,
                "Permission denied: the read rules at \(location.abbreviated) depend on the data or the time; the change log there is for the admin credential")
        }
        let readable = try await engine.onReaderPublic { engine.canRead(location, query: nil, access) }
        guard readable else { throw EddyError(.permissionDenied, "Permission denied") }
    }

    func tail(_ requestID: UInt64, _ body: Value, _ engine: Engine) throws(EddyError) {
        try self.reserveStream(requestID, forTail: true)
        var position: LogID? = nil
        if let text = try Self.string(body, "since", optional: true) {
            guard let id = LogID(text) else { throw EddyError(.invalidArgument, "\"since\" \(text) is not a log id") }
            guard try engine.canResume(after: id) else {
                let oldest = try engine.firstLogID()
                throw EddyError(
                    .notFound,
                    "log entry \(id) is not in the log (oldest kept: \(oldest?.rawValue ?? "none")); tail without since to start from the oldest")
            }
            position = id
        }
        var filter: Path? = nil
        if let text = try Self.string(body, "path", optional: true) { filter = try Path(text) }
        let (stream, bell) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let token = self.doorbells.add(engine: engine, bell: bell)
        let open = self.state.withLock { state -> Bool in
            if state.closed || state.tails[requestID] != nil { return false }
            state.tails[requestID] = (token, bell)
            return true
        }
        guard open else {
            self.doorbells.remove(token)
            return
        }
        self.answer(.tailing, requestID, .object(["after": position.map { .string($0.rawValue) } ?? .null]))
        Task { [position] in
            // An ended tail (an error, the connection closing) frees its id and doorbell.
            defer { self.endTail(requestID, token: token) }
            var position = position
            var rings = stream.makeAsyncIterator()
            do throws(EddyError) {
                while true {
                    let stored = try await engine.storedLogEntries(
                        after: position, limit: Self.tailEntriesPerFrameMax, bytesMax: Self.tailFrameBytesMax)
                    guard let last = stored.last?.id else {
                        if await rings.next() == nil { return }
                        continue
                    }
                    if self.state.withLock({ $0.closed }) { return }
                    // The connection's identity or the rules may have changed since the last frame.
                    try await Self.checkTail(filter ?? Path(validatedKeys: []), engine, try self.access())
                    var payload = Array(#"{"changes":["#.utf8)
                    var first = true
                    for (id, bytes) in stored {
                        for record in try LogEntryCodec.decode(id: id, bytes).changeRecords(under: filter) {
                            if !first { payload.append(UInt8(ascii: ",")) }
                            first = false
                            JSONWriter.write(record, into: &payload, pretty: false, indent: 0)
                        }
                    }
                    payload += Array(#"],"last":""#.utf8) + Array(last.rawValue.utf8) + Array(#""}"#.utf8)
                    self.send(Frame(kind: .changes, requestID: requestID, payload: payload), logID: last)
                    position = last
                }
            } catch {
                self.fail(requestID, error)
            }
        }
    }

    /// Forgets the tail `requestID` if it is still the one with `token`.
    private func endTail(_ requestID: UInt64, token: UInt64) {
        let mine = self.state.withLock { state -> Bool in
            guard state.tails[requestID]?.token == token else { return false }
            state.tails.removeValue(forKey: requestID)
            return true
        }
        if mine { self.doorbells.remove(token) }
    }
}
