// The fallback transport: REST and SSE over HTTP (`http://host:port`, or Firebase's
// `useEmulator(withHost:port:)` pointed at eddyd's HTTP listener), for when the native
// protocol is out of reach. It takes the native protocol's requests and answers in its shapes
// (see `Transport`):
// - requests run one at a time, in the order made, on one URLSession (so writes commit in
//   order): `write` is PUT/PATCH/DELETE/POST with `if-match` for a conditional write, `get`
//   and `query` are GET (with `X-Firebase-ETag: true` when the ETag is asked for);
// - a write that cannot reach the server waits at the head of the queue and is tried again with
//   backoff (100 ms doubling to 5 s); reads fail with `disconnected`, and so does a conditional
//   write (a transaction's) whose request failed once it may have reached the server; an HTTP
//   408 (eddyd did not get the whole request, so applied none of it) counts as not reaching it;
// - each subscription is one SSE stream (`SSEStream`), resumed with `Last-Event-ID`;
// - onDisconnect writes are registered on eddyd's onDisconnect connection (`GET
//   /.ondisconnect.json`, an SSE stream that names itself), opened by the first of them and
//   kept while online: when it ends (goOffline, the process ends, the network drops) eddyd makes
//   them. A connection that drops is reopened with backoff and `.info/connected` turns false
//   and true again, so presence code registers its writes again, as with Firebase.
// A write's answer and its events come on different connections, so an acknowledged write
// stays shown until the view's stream passes its log id (eddyd's `X-Eddy-Log-ID` header), or
// has been quiet for `PendingWrite.streamedGraceSeconds` without passing it while the view's
// server copy holds the write's values (up to `PendingWrite.streamedHoldMaxSeconds` otherwise).
//
// Bounds: as the native connection, at most `ClientConnection.writesWaitingMax` requests wait.

import Dispatch
import EddyModel
import EddyProtocol
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

final class HTTPTransport: Transport {
    private struct Job {
        let kind: Frame.Kind
        let payload: Value
        let answer: ClientConnection.Answer
        /// Its place in the order requests were made.
        var seq: UInt64 = 0
        /// Times eddyd did not know the onDisconnect connection the job was sent on.
        var staleConnections = 0

        var isOnDisconnect: Bool { self.kind == .onDisconnect || self.kind == .cancelDisconnect }
        /// Writes and onDisconnect requests wait for the connection; reads fail without it.
        var waitsOffline: Bool { self.kind == .write || self.isOnDisconnect }
        /// A transaction's write (`if-match`): once it may have reached the server, it is not
        /// tried again (see `ClientConnection`).
        /// (`Value`'s subscript answers .null for a missing member, never nil.)
        var isConditionalWrite: Bool {
            guard self.kind == .write, case .string = self.payload["ifMatch"] else { return false }
            return true
        }
    }

    private struct State {
        /// `Authorization: Bearer` of every request and stream.
        var authToken: String?
        var offline = false
        var nextID: UInt64 = 1
        var jobs: [Job] = []
        var nextJobSeq: UInt64 = 1
        /// Streams not started yet: each waits until the writes made before it (up to the
        /// write `after`) have been answered (`releaseDeferredStreams`).
        var deferredStreams: [(id: UInt64, after: UInt64)] = []
        var running = false
        /// The running job's request when it is a transaction's write: `goOffline` cancels it.
        var runningConditionalWrite: URLSessionDataTask?
        var streams: [UInt64: SSEStream] = [:]
        var connected = false
        var retryMilliseconds = 100
        var onState: (@Sendable (Bool) -> Void)?
        /// The onDisconnect connection: its stream, and its id once eddyd named it.
        var presence: SSEStream?
        var presenceID: String?
        /// Tells the current presence stream's callbacks from those of one replaced.
        var presenceGeneration: UInt64 = 0
        /// An onDisconnect request was made: a dropped connection and goOnline reopen it.
        var presenceWanted = false
        var presenceRetryMilliseconds = 100
    }

    /// Times a job is sent again on a new onDisconnect connection after eddyd did not know the
    /// one it was sent on, before it fails.
    static let staleConnectionsMax = 3

    /// scheme://host:port of eddyd's HTTP listener.
    let base: String
    /// The namespace (`?ns=`) every request names, if any.
    let namespace: String?
    /// What a stream sends first on Linux to open its connection (`SSEStream`): eddyd's status,
    /// cheap and the same for every caller.
    private var warmUpURL: URL? { URL(string: self.base + "/.status.json") }
    private let session: URLSession
    private let state = Mutex(State())

    func setAuthToken(_ token: String?) {
        self.state.withLock { $0.authToken = token }
    }

    init(base: String, namespace: String?) {
        self.base = base.hasSuffix("/") ? String(base.dropLast()) : base
        self.namespace = namespace
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 60
        self.session = URLSession(configuration: configuration)
    }

    func onStateChange(_ handler: @escaping @Sendable (Bool) -> Void) {
        self.state.withLock { $0.onState = handler }
    }

    // MARK: Requests

    func request(_ kind: Frame.Kind, _ payload: Value, answer: @escaping ClientConnection.Answer) {
        var job = Job(kind: kind, payload: payload, answer: answer)
        let refusal = self.state.withLock { state -> DatabaseError? in
            if !job.waitsOffline && state.offline {
                return DatabaseError(.disconnected, "the client is offline (goOffline); reads need the connection to eddyd")
            }
            if state.jobs.count >= ClientConnection.writesWaitingMax {
                return DatabaseError(.writeCanceled, "\(ClientConnection.writesWaitingMax) requests already wait for eddyd at \(self.base)")
            }
            job.seq = state.nextJobSeq
            state.nextJobSeq += 1
            state.jobs.append(job)
            return nil
        }
        if let refusal { answer(.failure(refusal)) } else { self.pump() }
    }

    private enum Next {
        case wait
        case send(Job, presenceID: String?)
        /// A cancel with no onDisconnect connection: nothing is registered, nothing to send.
        case cancelledNone(Job)
        case openPresence
    }

    /// Starts the job at the head of the queue unless one runs.
    private func pump() {
        let next = self.state.withLock { state -> Next in
            guard !state.running, !state.offline, let job = state.jobs.first else { return .wait }
            if job.isOnDisconnect && state.presenceID == nil {
                if job.kind == .cancelDisconnect && state.presence == nil {
                    state.jobs.removeFirst()
                    return .cancelledNone(job)
                }
                state.presenceWanted = true
                return state.presence == nil ? .openPresence : .wait  // the job waits for the id
            }
            state.running = true
            return .send(job, presenceID: state.presenceID)
        }
        let job: Job
        let presenceID: String?
        switch next {
        case .wait:
            return
        case .openPresence:
            self.openPresence()
            return
        case .cancelledNone(let cancel):
            cancel.answer(.success((.value, .object(["value": .object(["cancelled": .number(0)])]))))
            self.pump()
            return
        case .send(let head, let id):
            job = head
            presenceID = id
        }
        var request: URLRequest
        do {
            request = try self.urlRequest(job.kind, job.payload, presenceID: presenceID)
            if let token = self.state.withLock({ $0.authToken }) { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        } catch {
            self.finish(job, .failure(error))
            return
        }
        let task = self.session.dataTask(with: request) { data, response, error in
            if job.isConditionalWrite { self.state.withLock { $0.runningConditionalWrite = nil } }
            let code = (error as? URLError)?.code
            if error != nil, job.isConditionalWrite, code != .cannotConnectToHost, code != .cannotFindHost {
                // It may have been applied: as Firebase fails a sent transaction, so does this.
                self.setConnected(false)
                self.finish(job, .failure(DatabaseError(.disconnected, "the connection to eddyd at \(self.base) was lost while the transaction's write was on its way")))
                return
            }
            if let error, code != .cancelled {
                self.unreachable(job, DatabaseError(.disconnected, "cannot reach eddyd at \(self.base): \(error.localizedDescription)"))
                return
            }
            guard let http = response as? HTTPURLResponse else {
                self.unreachable(job, DatabaseError(.disconnected, "eddyd at \(self.base) sent no HTTP answer"))
                return
            }
            if http.statusCode == 408 {
                // eddyd timed the request out before it had all of it, so nothing of it was
                // applied: tried again like a request that did not reach it. (URLSession on
                // Linux sends a request again by itself when its reused connection dies before
                // an answer, but without the body: eddyd then answers 408.)
                self.unreachable(job, DatabaseError(.disconnected, "eddyd at \(self.base) timed the request out before it had all of it (HTTP 408)"))
                return
            }
            self.setConnected(true)
            if job.isOnDisconnect, http.statusCode == 404, job.staleConnections < Self.staleConnectionsMax, let presenceID {
                self.presenceUnknown(presenceID)
                return
            }
            self.finish(job, Self.answer(job, http, data ?? Data()))
        }
        if job.isConditionalWrite { self.state.withLock { $0.runningConditionalWrite = task } }
        task.resume()
    }

    private func finish(_ job: Job, _ result: Result<(kind: Frame.Kind, payload: Value), DatabaseError>) {
        self.state.withLock { state in
            state.running = false
            state.retryMilliseconds = 100
            if !state.jobs.isEmpty { state.jobs.removeFirst() }
        }
        self.releaseDeferredStreams()
        job.answer(result)
        self.pump()
    }

    /// The server could not be reached: a write stays at the head and is tried again after
    /// the backoff; anything else fails.
    private func unreachable(_ job: Job, _ error: DatabaseError) {
        self.setConnected(false)
        guard job.waitsOffline else {
            self.finish(job, .failure(error))
            return
        }
        let delay = self.state.withLock { state -> Int in
            let delay = state.retryMilliseconds
            state.retryMilliseconds = min(5000, delay * 2)
            return delay
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delay)) {
            self.state.withLock { $0.running = false }
            self.pump()
        }
    }

    private func setConnected(_ connected: Bool) {
        let handler = self.state.withLock { state -> (@Sendable (Bool) -> Void)? in
            guard state.connected != connected else { return nil }
            state.connected = connected
            return state.onState
        }
        handler?(connected)
    }

    func url(path: String, query: Value?, extra: [URLQueryItem] = []) throws(DatabaseError) -> URL {
        let keys = (try? Path(path).keys) ?? path.split(separator: "/").map(String.init)
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#%;")
        let encoded = keys.map { $0.addingPercentEncoding(withAllowedCharacters: allowed) ?? $0 }.joined(separator: "/")
        guard var components = URLComponents(string: self.base + "/" + encoded + ".json") else {
            throw DatabaseError(.invalidQuery, "\(path) does not make a URL under \(self.base)")
        }
        var items = extra
        if let namespace { items.append(URLQueryItem(name: "ns", value: namespace)) }
        if case .object(let parameters) = query {
            for (name, value) in parameters.sorted(by: { $0.key < $1.key }) {
                if case .string(let text) = value { items.append(URLQueryItem(name: name, value: text)) }
            }
        }
        if !items.isEmpty { components.queryItems = items }
        // '+' in a query value would read as a space.
        components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        guard let url = components.url else { throw DatabaseError(.invalidQuery, "\(path) does not make a URL under \(self.base)") }
        return url
    }

    private func urlRequest(_ kind: Frame.Kind, _ payload: Value, presenceID: String?) throws(DatabaseError) -> URLRequest {
        var path = "/"
        if case .string(let text) = payload["path"] { path = text }
        switch kind {
        case .write:
            var request = URLRequest(url: try self.url(path: path, query: nil, extra: [URLQueryItem(name: "print", value: "silent")]))
            guard case .string(let op) = payload["op"] else { throw DatabaseError(.invalidValue, "a write without an op") }
            switch op {
            case "set": request.httpMethod = "PUT"
            case "update": request.httpMethod = "PATCH"
            case "remove": request.httpMethod = "DELETE"
            case "push": request.httpMethod = "POST"
            default: throw DatabaseError(.invalidValue, "write op \(op) is not one of set, update, remove, push")
            }
            if op != "remove" { request.httpBody = Data(JSONWriter.bytes(payload["value"])) }
            if case .string(let etag) = payload["ifMatch"] { request.setValue(etag, forHTTPHeaderField: "if-match") }
            return request
        case .get, .query:
            // `"priorities": true`: the export form (`format=export`), as the native protocol answers it.
            let format = payload["priorities"] == .bool(true) ? [URLQueryItem(name: "format", value: "export")] : []
            var request = URLRequest(url: try self.url(path: path, query: payload["query"], extra: format))
            if payload["etag"] == .bool(true) { request.setValue("true", forHTTPHeaderField: "X-Firebase-ETag") }
            return request
        case .status:
            guard let url = URL(string: self.base + "/.status.json") else { throw DatabaseError(.invalidQuery, "bad base URL \(self.base)") }
            return URLRequest(url: url)
        case .onDisconnect, .cancelDisconnect:
            guard let presenceID, var components = URLComponents(string: self.base + "/.ondisconnect/" + presenceID + ".json") else {
                throw DatabaseError(.disconnected, "no onDisconnect connection to eddyd at \(self.base)")
            }
            if let namespace { components.queryItems = [URLQueryItem(name: "ns", value: namespace)] }
            guard let url = components.url else { throw DatabaseError(.invalidQuery, "bad base URL \(self.base)") }
            var body = payload
            if kind == .cancelDisconnect, case .object(var members) = body {
                members["op"] = .string("cancel")
                body = .object(members)
            }
            var request = URLRequest(url: url)
            request.httpMethod = "POST"
            request.httpBody = Data(JSONWriter.bytes(body))
            return request
        default:
            throw DatabaseError(.invalidQuery, "the HTTP transport does not send \(kind) requests")
        }
    }

    /// The native answer for an HTTP response.
    private static func answer(_ job: Job, _ response: HTTPURLResponse, _ body: Data) -> Result<(kind: Frame.Kind, payload: Value), DatabaseError> {
        let parsed = body.isEmpty ? Value.null : ((try? JSONParser.parse(Array(body))) ?? .null)
        let etag = response.value(forHTTPHeaderField: "ETag")
        switch response.statusCode {
        case 200..<300:
            switch job.kind {
            case .write:
                // The log id (eddyd's X-Eddy-Log-ID) tells the views when their stream has passed the write.
                var payload: [String: Value] = ["streamed": .bool(true)]
                if let logID = response.value(forHTTPHeaderField: "X-Eddy-Log-ID") { payload["logID"] = .string(logID) }
                return .success((.written, .object(payload)))
            case .status: return .success((.value, parsed))
            default:
                var payload: [String: Value] = ["value": parsed]
                if let etag { payload["etag"] = .string(etag) }
                return .success((.value, .object(payload)))
            }
        case 412:
            return .failure(DatabaseError(.dataStale, "the write was conditional (ifMatch) and the value changed; it was not applied"))
        default:
            return .failure(self.error(status: response.statusCode, body: parsed))
        }
    }

    static func error(status: Int, body: Value) -> DatabaseError {
        var message = "HTTP \(status)"
        if case .string(let text) = body["error"] { message = text }
        let code: String
        switch status {
        case 400 where message.contains("request-bytes-max"): code = "limitExceeded"
        case 400, 404: code = message.hasPrefix("Index not defined") ? "invalidArgument" : "invalidValue"
        case 401, 403: code = "permissionDenied"
        case 413: code = "limitExceeded"  // a proxy's body limit (eddyd answers 400, above)
        case 507: code = "insufficientStorage"
        default: code = "http\(status)"
        }
        return DatabaseError(serverCode: code, message: message)
    }

    // MARK: Subscriptions

    @discardableResult
    func subscribe(_ payload: Value, _ subscription: ClientConnection.Subscription) -> UInt64 {
        var path = "/"
        if case .string(let text) = payload["path"] { path = text }
        var since: String?
        if case .string(let text) = payload["since"] { since = text }
        let url: URL
        do {
            // `"priorities": true`: the stream in export form (`format=export`), as the native
            // protocol's subscription.
            let format = payload["priorities"] == .bool(true) ? [URLQueryItem(name: "format", value: "export")] : []
            url = try self.url(path: path, query: payload["query"], extra: format)
        } catch {
            subscription.onFrame(.error, .object(["code": .string("invalidArgument"), "message": .string(error.message)]))
            return 0
        }
        let (id, stream, offline) = self.state.withLock { state -> (UInt64, SSEStream, Bool) in
            let id = state.nextID
            state.nextID += 1
            let stream = SSEStream(url: url, warmUpURL: self.warmUpURL, since: since, authToken: state.authToken, subscription: subscription) {
                [weak self] connected in
                self?.setConnected(connected)
            }
            state.streams[id] = stream
            // As Firebase's listen goes after the writes made before it on its one connection,
            // so that its first data holds them (another client reading once this one's value
            // came sees them too), the stream starts once those writes are answered.
            if !state.offline, let write = state.jobs.last(where: { $0.kind == .write }) {
                state.deferredStreams.append((id, write.seq))
                return (id, stream, true)
            }
            return (id, stream, state.offline)
        }
        if !offline { stream.start() }
        return id
    }

    /// Starts the deferred streams whose writes have all been answered (or purged).
    private func releaseDeferredStreams() {
        let ready = self.state.withLock { state -> [SSEStream] in
            guard !state.deferredStreams.isEmpty, !state.offline else { return [] }
            let oldestWrite = state.jobs.first(where: { $0.kind == .write })?.seq ?? .max
            var ready: [SSEStream] = []
            state.deferredStreams.removeAll { deferred in
                guard deferred.after < oldestWrite else { return false }
                if let stream = state.streams[deferred.id] { ready.append(stream) }
                return true
            }
            return ready
        }
        for stream in ready { stream.start() }
    }

    func unsubscribe(_ id: UInt64) {
        let stream = self.state.withLock { $0.streams.removeValue(forKey: id) }
        stream?.cancel(notify: false)
    }

    func goOffline() {
        let (streams, presence, transaction) = self.state.withLock { state -> ([SSEStream], SSEStream?, URLSessionDataTask?) in
            state.offline = true
            defer {
                state.runningConditionalWrite = nil
                state.streams.removeAll()
                state.deferredStreams.removeAll()
                state.presence = nil
                state.presenceID = nil
                state.presenceGeneration += 1
            }
            return (Array(state.streams.values), state.presence, state.runningConditionalWrite)
        }
        // A transaction's write on its way fails with `disconnected`, as on the native protocol.
        transaction?.cancel()
        // Closing the onDisconnect connection is what makes eddyd run its writes, as Firebase's
        // goOffline does; the observers' streams end first, so none hears their events before the
        // client shows them itself (`Database.showDisconnectWrites`, on the state change).
        for stream in streams { stream.cancel(notify: true) }
        presence?.cancel(notify: false)
        self.setConnected(false)
    }

    /// Nothing to open ahead: requests and streams are their own HTTP connections.
    func open() {}

    func goOnline() {
        let (streams, reopen) = self.state.withLock { state -> ([SSEStream], Bool) in
            // Online already: the streams run (starting them again would open a second
            // connection for each). Offline, every stream starts now, deferred ones too, as
            // Firebase restores its listens before the writes that wait.
            defer { state.offline = false }
            if state.offline { state.deferredStreams.removeAll() }
            return (state.offline ? Array(state.streams.values) : [], state.presenceWanted && state.presence == nil)
        }
        for stream in streams { stream.start() }
        if reopen { self.openPresence() }
        // `.info/connected` turns true once eddyd answers, even with nothing else to send.
        if streams.isEmpty && !reopen { self.request(.status, .object([:])) { _ in } }
        self.pump()
    }

    // MARK: The onDisconnect connection

    /// Opens eddyd's onDisconnect connection (`GET /.ondisconnect.json`) unless one is open or
    /// opening; the jobs that need its id wait for it.
    private func openPresence() {
        guard var components = URLComponents(string: self.base + "/.ondisconnect.json") else { return }
        if let namespace { components.queryItems = [URLQueryItem(name: "ns", value: namespace)] }
        guard let url = components.url else { return }
        let stream = self.state.withLock { state -> SSEStream? in
            guard !state.offline, state.presence == nil else { return nil }
            state.presenceGeneration += 1
            let generation = state.presenceGeneration
            let subscription = ClientConnection.Subscription(
                onFrame: { [weak self] kind, payload in self?.presenceFrame(generation, kind, payload) },
                onEnd: { [weak self] _ in self?.presenceEnded(generation) })
            let stream = SSEStream(url: url, warmUpURL: self.warmUpURL, since: nil, authToken: state.authToken, subscription: subscription) {
                [weak self] connected in
                self?.setConnected(connected)
            }
            state.presence = stream
            return stream
        }
        stream?.start()
    }

    private func presenceFrame(_ generation: UInt64, _ kind: Frame.Kind, _ payload: Value) {
        switch kind {
        case .subscribed:
            guard case .string(let id) = payload["connection"] else {
                self.presenceRefused(generation, DatabaseError(.unknownError, "eddyd at \(self.base) did not name its onDisconnect connection (an eddyd without onDisconnect over HTTP)"))
                return
            }
            let current = self.state.withLock { state -> Bool in
                guard state.presenceGeneration == generation else { return false }
                state.presenceID = id
                state.presenceRetryMilliseconds = 100
                return true
            }
            if current { self.pump() }
        case .error:
            var message = "eddyd at \(self.base) refused the onDisconnect connection"
            if case .string(let text) = payload["message"] { message = text }
            var code = "unknownError"
            if case .string(let text) = payload["code"] { code = text }
            self.presenceRefused(generation, DatabaseError(serverCode: code, message: message))
        default:
            break
        }
    }

    /// eddyd refused the connection (an older eddyd, a bad credential): the onDisconnect
    /// requests that wait for it fail with the reason.
    private func presenceRefused(_ generation: UInt64, _ error: DatabaseError) {
        let (failed, stream) = self.state.withLock { state -> ([Job], SSEStream?) in
            guard state.presenceGeneration == generation else { return ([], nil) }
            defer {
                state.presence = nil
                state.presenceID = nil
                state.presenceWanted = false
                state.presenceGeneration += 1
            }
            let skip = state.running ? 1 : 0
            let failed = state.jobs.dropFirst(skip).filter(\.isOnDisconnect)
            state.jobs = Array(state.jobs.prefix(skip)) + state.jobs.dropFirst(skip).filter { !$0.isOnDisconnect }
            return (Array(failed), state.presence)
        }
        stream?.cancel(notify: false)
        for job in failed { job.answer(.failure(error)) }
        self.pump()
    }

    /// The connection ended without goOffline (eddyd stopped, the network dropped): eddyd has
    /// run its writes. `.info/connected` turns false, and the connection is opened again after a
    /// backoff (100 ms doubling to 5 s); presence code registers again when it turns true.
    private func presenceEnded(_ generation: UInt64) {
        let delay = self.state.withLock { state -> Int? in
            guard state.presenceGeneration == generation else { return nil }
            state.presence = nil
            state.presenceID = nil
            state.presenceGeneration += 1
            guard state.presenceWanted, !state.offline else { return nil }
            let delay = state.presenceRetryMilliseconds
            state.presenceRetryMilliseconds = min(5000, delay * 2)
            return delay
        }
        guard let delay else { return }
        self.setConnected(false)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delay)) { [weak self] in self?.openPresence() }
    }

    /// eddyd answered 404 for the connection `id` (it ended before the client noticed): the
    /// job at the head goes again on a new connection.
    private func presenceUnknown(_ id: String) {
        let stale = self.state.withLock { state -> SSEStream? in
            state.running = false
            if !state.jobs.isEmpty { state.jobs[0].staleConnections += 1 }
            guard state.presenceID == id else { return nil }
            defer {
                state.presence = nil
                state.presenceID = nil
                state.presenceGeneration += 1
            }
            return state.presence
        }
        stale?.cancel(notify: false)
        self.pump()
    }

    func purgeWaitingWrites() {
        let canceled = self.state.withLock { state -> [Job] in
            let skip = state.running ? 1 : 0
            // Writes and onDisconnect requests, as Firebase's purge cancels both.
            let purged: Set<Frame.Kind> = [.write, .onDisconnect, .cancelDisconnect]
            let canceled = state.jobs.dropFirst(skip).filter { purged.contains($0.kind) }
            state.jobs = Array(state.jobs.prefix(skip)) + state.jobs.dropFirst(skip).filter { !purged.contains($0.kind) }
            return Array(canceled)
        }
        self.releaseDeferredStreams()
        for job in canceled { job.answer(.failure(DatabaseError(.writeCanceled, "the write was canceled by purgeOutstandingWrites()"))) }
    }
}
