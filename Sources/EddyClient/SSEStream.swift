// One subscription of the HTTP transport: a Firebase REST stream (text/event-stream) turned
// into the native protocol's frames. The answer's headers give `subscribed`; each `put` or
// `patch` becomes a `value` event with that change and the frame's log id (`id:`), the events
// parsed from one read arriving as one `events` frame; `cancel` (its data null, as Firebase's
// docs say, eddyd's reason in a comment line) becomes the native protocol's `cancel` event with
// that reason; the end of the stream `onEnd`.
// Resumes from a log id with `Last-Event-ID`. At most `bufferBytesMax` bytes of an unfinished
// event are held; more ends the stream.
//
// On Linux (swift-corelibs-foundation) a stream first sends a short request (`warmUpURL`) on its
// session and starts once that is answered, so that it runs on a connection already open: a
// connection the stream opened itself would keep a writability source for the transfer's life
// (corelibs never tears one down while a transfer runs), and an idle stream would then wake its
// process thousands of times a second, about 0.8 of a core each. Only the stream's own task
// (`State.streamTask`) reaches the delegate methods' handling.

import EddyModel
import EddyProtocol
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

final class SSEStream: NSObject, URLSessionDataDelegate, Sendable {
    static let bufferBytesMax = 512 << 20

    private struct State {
        var session: URLSession?
        /// The stream's task (`taskIdentifier`), once made; the warm-up request is not it.
        var streamTask: Int?
        var buffer: [UInt8] = []
        /// How far `buffer` was searched for the end of an event (so a large event that arrives
        /// in many reads is scanned once, not once per read).
        var scanned = 0
        var status = 0
        var errorBody: [UInt8] = []
        var ended = false
    }

    private let url: URL
    /// A cheap request to the same server (eddyd's `/.status.json`) sent first on Linux; nil: none.
    private let warmUpURL: URL?
    private let since: String?
    private let authToken: String?
    private let subscription: ClientConnection.Subscription
    private let connected: @Sendable (Bool) -> Void
    private let state = Mutex(State())

    init(
        url: URL, warmUpURL: URL? = nil, since: String?, authToken: String? = nil, subscription: ClientConnection.Subscription,
        connected: @escaping @Sendable (Bool) -> Void
    ) {
        self.authToken = authToken
        self.url = url
        self.warmUpURL = warmUpURL
        self.since = since
        self.subscription = subscription
        self.connected = connected
    }

    func start() {
        var request = URLRequest(url: self.url)
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        if let since { request.setValue(since, forHTTPHeaderField: "Last-Event-ID") }
        if let authToken { request.setValue("Bearer \(authToken)", forHTTPHeaderField: "Authorization") }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 24 * 3600
        configuration.timeoutIntervalForResource = 365 * 24 * 3600
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
        let started = self.state.withLock { state -> Bool in
            guard state.session == nil, !state.ended else { return false }
            state.session = session
            return true
        }
        // A stream runs on one connection: started already (or ended), this one is dropped.
        guard started else {
            session.invalidateAndCancel()
            return
        }
        #if canImport(FoundationNetworking)
            if let warmUpURL = self.warmUpURL {
                // Whatever its answer (an error too), the stream follows: on the connection it
                // left open, or on a new one as without it.
                var warmUp = URLRequest(url: warmUpURL)
                if let authToken { warmUp.setValue("Bearer \(authToken)", forHTTPHeaderField: "Authorization") }
                let streamRequest = request
                session.dataTask(with: warmUp) { _, _, _ in self.startStream(on: session, streamRequest) }.resume()
                return
            }
        #endif
        self.startStream(on: session, request)
    }

    /// Starts the stream's task on `session`, unless the stream ended (or restarted) meanwhile.
    private func startStream(on session: URLSession, _ request: URLRequest) {
        // Made under the lock: `cancel` invalidates the session only after marking the stream
        // ended, and an invalidated session cannot make a task.
        let task = self.state.withLock { state -> URLSessionDataTask? in
            guard state.session === session, !state.ended else { return nil }
            let task = session.dataTask(with: request)
            state.streamTask = task.taskIdentifier
            return task
        }
        task?.resume()
    }

    private func isStream(_ task: URLSessionTask) -> Bool {
        self.state.withLock { $0.streamTask == task.taskIdentifier }
    }

    /// Stops the stream; `notify` tells the subscription it ended (so it subscribes again).
    func cancel(notify: Bool) {
        let (session, first) = self.state.withLock { state -> (URLSession?, Bool) in
            defer {
                state.ended = true
                state.session = nil
            }
            return (state.session, !state.ended)
        }
        session?.invalidateAndCancel()
        if notify && first { self.subscription.onEnd(DatabaseError(.disconnected, "the client went offline")) }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        guard self.isStream(dataTask) else {
            completionHandler(.allow)
            return
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        self.state.withLock { $0.status = status }
        self.connected(true)
        if status == 200 {
            // eddyd's onDisconnect connection (`GET /.ondisconnect.json`) names itself in a header.
            var payload: [String: Value] = [:]
            if let id = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "X-Eddy-Connection") { payload["connection"] = .string(id) }
            self.subscription.onFrame(.subscribed, .object(payload))
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let events = self.state.withLock { state -> [Value]? in
            guard !state.ended, state.streamTask == dataTask.taskIdentifier else { return [] }
            if state.status != 200 {
                if state.errorBody.count < 1 << 20 { state.errorBody += data }
                return []
            }
            state.buffer += data
            var events: [Value] = []
            var start = 0
            while let end = Self.eventEnd(state.buffer, from: max(start, state.scanned - 3)) {
                if let event = Self.parse(state.buffer[start..<end.start]) { events.append(event) }
                start = end.next
            }
            state.buffer.removeFirst(start)  // once per read, not once per event
            state.scanned = state.buffer.count
            return state.buffer.count > Self.bufferBytesMax ? nil : events
        }
        guard let events else {
            self.end(DatabaseError(.unknownError, "an SSE event from \(self.url) exceeded \(Self.bufferBytesMax >> 20) MiB"))
            return
        }
        var changes: [Value] = []
        for event in events {
            if case .string(let kind) = event["event"], kind == "cancel" {
                if !changes.isEmpty { self.deliver(changes) }
                changes = []
                // eddyd's reason in a comment line, else the event's data (Firebase's).
                self.cancelled(event["comment"].isNull ? event["data"] : event["comment"])
                return
            }
            changes.append(event)
        }
        if !changes.isEmpty { self.deliver(changes) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard self.isStream(task) else { return }
        let (status, body) = self.state.withLock { ($0.status, $0.errorBody) }
        if status != 0 && status != 200 {
            let parsed = (try? JSONParser.parse(body)) ?? .null
            let error = HTTPTransport.error(status: status, body: parsed)
            let first = self.state.withLock { state -> Bool in
                defer { state.ended = true }
                return !state.ended
            }
            session.finishTasksAndInvalidate()
            if first { self.subscription.onFrame(.error, .object(["code": .string(Self.serverCode(status, error)), "message": .string(error.message)])) }
            return
        }
        if status == 0 { self.connected(false) }
        session.finishTasksAndInvalidate()
        self.end(DatabaseError(.disconnected, "the stream from \(self.url) ended\(error.map { ": \($0.localizedDescription)" } ?? "")"))
    }

    private static func serverCode(_ status: Int, _ error: DatabaseError) -> String {
        switch error.code {
        case .permissionDenied: return "permissionDenied"
        case .invalidQuery: return "invalidArgument"
        case .invalidValue: return "invalidValue"
        default: return "http\(status)"
        }
    }

    private func end(_ error: DatabaseError) {
        let first = self.state.withLock { state -> Bool in
            defer { state.ended = true }
            return !state.ended
        }
        if first { self.subscription.onEnd(error) }
    }

    private func cancelled(_ reason: Value) {
        let first = self.state.withLock { state -> Bool in
            defer { state.ended = true }
            return !state.ended
        }
        guard first else { return }
        self.state.withLock { $0.session }?.invalidateAndCancel()
        // The native protocol's shape, a `cancel` event with the reason: the view decides what
        // it means (`QueryView.listenEnded`).
        let message: Value = if case .string = reason { reason } else { .string("the server ended the stream") }
        self.subscription.onFrame(.events, .object(["events": .object(["0": .object(["kind": .string("cancel"), "value": message])])]))
    }

    /// One `events` frame of `value` events, one per put/patch.
    private func deliver(_ events: [Value]) {
        var list: [String: Value] = [:]
        for event in events {
            guard case .string(let kind) = event["event"], kind == "put" || kind == "patch" else { continue }
            var wire: [String: Value] = [
                "kind": .string("value"),
                "changes": .object(["0": .object(["op": .string(kind), "path": event["data"]["path"], "data": event["data"]["data"]])]),
            ]
            if case .string(let id) = event["id"] { wire["logID"] = .string(id) }
            list[String(list.count)] = .object(wire)
        }
        guard !list.isEmpty else { return }
        self.subscription.onFrame(.events, .object(["events": .object(list)]))
    }

    /// Where the first event that ends (a blank line) at or after `from` in `buffer` ends, and
    /// where the next starts.
    private static func eventEnd(_ buffer: [UInt8], from: Int) -> (start: Int, next: Int)? {
        var i = max(0, from)
        while i + 1 < buffer.count {
            if buffer[i] == 0x0A && buffer[i + 1] == 0x0A { return (i, i + 2) }
            if i + 3 < buffer.count, buffer[i] == 0x0D, buffer[i + 1] == 0x0A, buffer[i + 2] == 0x0D, buffer[i + 3] == 0x0A {
                return (i, i + 4)
            }
            i += 1
        }
        return nil
    }

    /// An event block as {"event", "id", "data" (parsed JSON)}.
    private static func parse(_ block: ArraySlice<UInt8>) -> Value? {
        var fields: [String: Value] = [:]
        var data: [UInt8] = []
        for line in block.split(separator: 0x0A) {
            var line = line
            if line.last == 0x0D { line = line.dropLast() }
            guard let colon = line.firstIndex(of: 0x3A) else { continue }
            let name = String(decoding: line[..<colon], as: UTF8.self)
            var rest = line[(colon + 1)...]
            if rest.first == 0x20 { rest = rest.dropFirst() }
            switch name {
            case "event": fields["event"] = .string(String(decoding: rest, as: UTF8.self))
            case "id": fields["id"] = .string(String(decoding: rest, as: UTF8.self))
            case "data":
                if !data.isEmpty { data.append(0x0A) }
                data += rest
            case "":
                // A comment line: eddyd gives a `cancel`'s reason there (its data is null).
                fields["comment"] = .string(String(decoding: rest, as: UTF8.self))
            default: break
            }
        }
        guard fields["event"] != nil else { return nil }
        fields["data"] = (try? JSONParser.parse(data)) ?? .null
        return .object(fields)
    }
}
