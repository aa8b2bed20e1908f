// Answers every HTTP request with Firebase REST semantics (one responder, no router: any
// method on any path must get a Firebase-shaped answer, 405 included).
//
//   GET     read (shallow=true, orderBy queries, X-Firebase-ETag: true -> ETag, if-none-match -> 304)
//   PUT     replace; answers the written value (if-match -> 412 with current value + ETag)
//   POST    push; answers {"name": "<push id>"}; X-HTTP-Method-Override selects another method
//   PATCH   multi-path update; answers the body as written
//   DELETE  remove; answers null (if-match as PUT)
// print=silent answers 204 with no body; print=pretty indents; callback=fn (GET) answers fn(<json>);.
// format=export answers priorities (export form) and never renders arrays; download=NAME (GET)
// adds Content-Disposition: attachment. <path>/.priority.json: GET, PUT, DELETE a priority.
// /.settings/rules.json: GET the rules document, PUT to replace it.
// /.settings/indexes.json: GET every index with its state and build progress.
// /.settings/followers.json: GET the replication status (`ReplicationRole.status`).
// /.ondisconnect.json, /.ondisconnect/<id>.json: onDisconnect over HTTP (`RESTResponder+OnDisconnect`).

import Foundation
import EddyEngine
import EddyModel
import EddyReplication
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1

public struct RESTResponder: HTTPResponder {
    public typealias Context = EddyRequestContext

    let data: DataDirectory
    let requestBytesMax: Int
    /// Request bodies of every client in flight (`--request-bodies-bytes-total`).
    let bodyBudget: MemoryBudget
    /// Seconds between keep-alive events on an event stream (sent on this period, events or not).
    let keepAliveSeconds: Int
    /// Event batches an event stream may fall behind before it is cut off (with a resume id).
    let streamBufferBatches: Int
    let streamBufferBytes: Int
    let streamBudget: MemoryBudget
    /// Leader or follower, for `/.settings/followers.json`.
    /// On a cluster's follower: the leader's HTTP URL, where writes are redirected (307).
    let writeRedirect: String?
    let replication: ReplicationRole
    /// Credentials to `Access`; also whether non-admins may create namespaces.
    let authenticator: Authenticator
    /// Host and Origin checks (DNS rebinding, cross-origin writes).
    let origins: OriginPolicy
    /// `/metrics` (nil: not served on this listener).
    let metrics: MetricsEndpoint?
    /// `/.health/live` and `/.health/ready`.
    let health: HealthEndpoint
    /// One info line per request (`--log-requests`).
    let logRequests: Bool
    /// Open onDisconnect connections (`/.ondisconnect`) and their writes.
    let onDisconnectSessions = OnDisconnectSessions()
    /// Their writes once the connections ended; shared with the native listeners, whose stop
    /// waits for them.
    let onDisconnectRuns: OnDisconnectRuns
    /// The last large first `put` of an event stream, for streams that would send the same.
    let initialPuts = InitialPutCache()
    let logger: Logger

    init(
        data: DataDirectory, requestBytesMax: Int, bodyBudget: MemoryBudget = MemoryBudget(bytesMax: 1 << 30), keepAliveSeconds: Int = 10, streamBufferBatches: Int = 8192,
        streamBufferBytes: Int = 16 << 20, streamBudget: MemoryBudget = MemoryBudget(bytesMax: 256 << 20),
        replication: ReplicationRole = .leader(FollowerRegistry()), authenticator: Authenticator = .emulator,
        origins: OriginPolicy = OriginPolicy(), metrics: MetricsEndpoint? = nil, readyLagMaxSeconds: Double = 10, logRequests: Bool = false,
        writeRedirect: String? = nil, onDisconnectRuns: OnDisconnectRuns = OnDisconnectRuns(), logger: Logger
    ) {
        self.onDisconnectRuns = onDisconnectRuns
        self.writeRedirect = writeRedirect
        self.logRequests = logRequests
        self.metrics = metrics
        self.health = HealthEndpoint(data: data, replication: replication, readyLagMaxSeconds: readyLagMaxSeconds)
        self.authenticator = authenticator
        self.origins = origins
        self.replication = replication
        self.data = data
        self.requestBytesMax = requestBytesMax
        self.bodyBudget = bodyBudget
        self.keepAliveSeconds = keepAliveSeconds
        self.streamBufferBatches = streamBufferBatches
        self.streamBufferBytes = streamBufferBytes
        self.streamBudget = streamBudget
        self.logger = logger
    }

    static let etagRequest = HTTPField.Name("X-Firebase-ETag")!
    static let logIDHeader = HTTPField.Name("X-Eddy-Log-ID")!
    static let methodOverride = HTTPField.Name("X-HTTP-Method-Override")!

    public func respond(to request: Request, context: Context) async throws -> Response {
        if request.method == .options, request.headers[.origin] != nil {
            guard let headers = self.origins.preflight(request.headers, host: request.head.authority) else {
                return Self.error(RESTError(status: 403, message: "cross-origin requests from this origin are not allowed; configure it with --cors-origin"))
            }
            return Response(status: .noContent, headers: headers)
        }
        let started = self.logRequests ? ContinuousClock.now : nil
        var response = await self.answer(request, channel: context.channel)
        if request.headers[.origin] != nil {
            for field in self.origins.corsHeaders(request.headers, host: request.head.authority) { response.headers.append(field) }
        }
        if let started {
            // One line per request (streams: when the answer starts). The query string is left
            // out: it may carry a credential (`auth=`).
            let elapsed = (ContinuousClock.now - started).components
            let milliseconds = Double(elapsed.seconds) * 1000 + Double(elapsed.attoseconds) / 1e15
            self.logger.info(
                "request",
                metadata: [
                    "eddy.method": "\(request.method.rawValue)", "eddy.path": "\(request.uri.path)", "eddy.status": "\(response.status.code)",
                    "eddy.ms": "\(String(format: "%.3f", milliseconds))",
                ])
        }
        return response
    }

    private func answer(_ request: Request, channel: any Channel) async -> Response {
        do {
            return try await self.handle(request, channel: channel)
        } catch let error as RESTError {
            return Self.failureAnswer(error, logger: self.logger).response
        } catch is NIOTooManyBytesError {
            return Self.error(
                RESTError.bodyTooLarge(
                    "request body is larger than request-bytes-max (\(self.requestBytesMax) bytes); see --request-bytes-max"))
        } catch let error as HTTPRequestTimedOut {
            // The 408 is already written (`HTTPTimeoutState`); this answer only names it.
            var refusal = RESTError(status: 408, message: error.description)
            refusal.closesConnection = true
            return Self.error(refusal)
        } catch let error as HTTPParserError {
            // The client's framing is broken (a bad chunk size, a chunk without its CRLF, a body
            // cut short): a client error; 5xx means a server fault only.
            var refusal = RESTError(status: 400, message: "malformed HTTP request body: \(error)")
            refusal.closesConnection = true
            return Self.error(refusal)
        } catch {
            self.logger.error("request failed", metadata: ["eddy.error": "\(error)"])
            return Self.error(RESTError(status: 500, message: "internal error; the server log has the details"))
        }
    }

    /// The answer to a refused or failed request; a server fault is logged.
    static func failureAnswer(_ error: RESTError, logger: Logger) -> RESTAnswer {
        if error.isInternal {
            logger.error("request failed", metadata: ["eddy.error": "\(error.underlying.map { "\($0)" } ?? error.message)"])
        }
        return Self.errorAnswer(error)
    }

    /// Calls `body` with the request body, at most `requestBytesMax` bytes: a `Content-Length`
    /// above it is refused before any byte is read, and a body (chunked) that grows past it as
    /// soon as it does (400, `RESTError.bodyTooLarge`). The body's bytes are held in `bodyBudget`
    /// until `body` returns (parsed and applied); one the budget cannot take is refused with 503
    /// (the connection closes, as the rest of the body is not read).
    func withBody<T>(_ request: Request, _ body: (ByteBuffer) async throws -> T) async throws -> T {
        var reserved = 0
        defer { if reserved > 0 { self.bodyBudget.release(reserved) } }
        func reserve(_ bytes: Int) throws(RESTError) {
            guard self.bodyBudget.reserve(bytes) else {
                var refusal = RESTError(
                    status: 503,
                    message: "too many request bytes in flight: \(self.bodyBudget.usedBytes) of request-bodies-bytes-total (\(self.bodyBudget.bytesMax) bytes) are taken by other requests; retry shortly (see --request-bodies-bytes-total)")
                refusal.closesConnection = true
                throw refusal
            }
            reserved += bytes
        }
        var collected = ByteBuffer()
        if let declared = request.headers[.contentLength], let length = Int(declared) {
            guard length <= self.requestBytesMax else {
                throw RESTError.bodyTooLarge(
                    "request body of \(length) bytes (Content-Length) is larger than request-bytes-max (\(self.requestBytesMax) bytes); see --request-bytes-max")
            }
            try reserve(length)
            collected.reserveCapacity(length)
        }
        for try await chunk in request.body {
            guard collected.readableBytes + chunk.readableBytes <= self.requestBytesMax else { throw NIOTooManyBytesError(maxBytes: self.requestBytesMax) }
            let beyond = collected.readableBytes + chunk.readableBytes - reserved
            if beyond > 0 { try reserve(beyond) }
            collected.writeImmutableBuffer(chunk)
        }
        return try await body(collected)
    }

    private func handle(_ incoming: Request, channel: any Channel) async throws -> Response {
        var request = incoming
        let method = try Self.method(of: request)
        try self.origins.check(request.headers, host: request.head.authority, method: method)
        if let probe = HealthEndpoint.probe(request.uri.path) { return try Self.healthResponse(self.health, probe, method: method) }
        if request.uri.path == "/metrics", let metrics = self.metrics {
            // Figures reveal namespaces and load: the admin's once credentials are configured
            // (Prometheus sends the secret with `authorization: credentials_file`); a separate
            // `--metrics` listener serves them without one.
            if self.authenticator.isConfigured {
                let identity: Authenticator.Identity?
                do {
                    identity = try self.authenticator.identifyWithoutVerifying(credential: Self.credential(request.headers), override: nil)
                } catch {
                    throw RESTError(error)
                }
                guard identity?.access.isAdmin == true else {
                    throw RESTError(EddyError(.permissionDenied, "Permission denied: /metrics is for the admin credential only (or use --metrics HOST:PORT)"))
                }
            }
            return try Self.metricsResponse(metrics, method: method)
        }
        let rest = try RESTRequest(method: method, rawPath: request.uri.path, rawQuery: request.uri.query)
        if rest.isInfo { return try Self.info(rest) }
        // A cluster's follower sends writes to its leader; Firebase's REST clients follow a 307
        // with the same method and body. onDisconnect connections live on the leader too.
        if let leader = self.writeRedirect, method != .get || rest.isOnDisconnect {
            return Response(status: .temporaryRedirect, headers: [.location: leader + request.uri.description])
        }
        let identity: Authenticator.Identity
        do {
            let credential = Self.credential(request.headers) ?? rest.credential
            // Known identities (most requests) are found without suspending.
            if let known = try self.authenticator.identifyWithoutVerifying(credential: credential, override: rest.authOverride) {
                identity = known
            } else {
                identity = try await self.authenticator.identify(credential: credential, override: rest.authOverride)
            }
        } catch {
            throw RESTError(error)
        }
        let access = identity.access
        let lease: EngineLease
        do {
            // Once authentication is configured only the admin creates namespaces; in the
            // emulator mode any caller does, as the Firebase emulator lets it.
            lease = try self.data.lease(namespace: rest.namespace, create: access.isAdmin || !self.authenticator.isConfigured)
        } catch {
            throw RESTError(error)
        }
        let response: Response
        do {
            response = try await self.handle(rest, &request, method: method, identity: identity, engine: lease.engine, channel: channel)
        } catch {
            lease.release()
            throw error
        }
        return Self.holding(lease, whileWriting: response)
    }

    /// The namespace stays open until a streamed body is written (an event stream, a streamed
    /// read and an onDisconnect connection use the engine until then; theirs are the only
    /// bodies without a length); a body never written releases it when dropped. A body made
    /// before returning (a buffer, with its length) needs the engine no more and is sent as it is.
    private static func holding(_ lease: EngineLease, whileWriting response: Response) -> Response {
        guard response.body.contentLength == nil else {
            lease.release()
            return response
        }
        var held = response
        let body = response.body
        held.body = ResponseBody { writer in
            defer { lease.release() }
            try await body.write(writer)
        }
        return held
    }

    /// A request on namespace `rest.namespace`, whose engine the caller holds.
    private func handle(
        _ rest: RESTRequest, _ request: inout Request, method: RESTRequest.Method, identity: Authenticator.Identity, engine: Engine,
        channel: any Channel
    ) async throws -> Response {
        let access = identity.access
        if rest.isStatus { return try self.status(rest, engine: engine) }
        if rest.isOnDisconnect {
            return try await self.onDisconnect(rest, request: request, identity: identity, engine: engine, channel: channel)
        }
        if rest.isRules || rest.isFollowers || rest.isIndexes, !access.isAdmin, self.authenticator.isConfigured {
            // Firebase: the rules (and Eddy's other settings) are the admin's. Without any
            // credential configured (the loopback emulator mode) they stay open, as everything is.
            throw RESTError(EddyError(.permissionDenied, "Permission denied: /.settings is for the admin credential only"))
        }
        if rest.isRules { return try await self.rules(rest, engine: engine, request: &request) }
        if rest.isFollowers {
            guard method == .get else { throw RESTError(status: 405, message: "replication status is read-only (GET)") }
            let status: Value
            do {
                status = try self.replication.status(engine, namespace: rest.namespace)
            } catch {
                throw RESTError(error)
            }
            let headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: JSONWriter.bytes(status))))
        }
        if rest.isIndexes {
            guard method == .get else { throw RESTError(status: 405, message: "index status is read-only (GET); change indexes through /.settings/rules.json") }
            // Written by hand: a `Value` cannot hold an empty array.
            let items = engine.indexStatus().map { JSONWriter.string($0.json) }
            let text = "{\"indexes\":[" + items.joined(separator: ",") + "]}"
            let headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
        }
        if rest.isPriority {
            if method == .put {
                return try await self.withBody(request) { body in
                    try await self.priority(rest, method: method, body: body, engine: engine, request: request, access: access)
                }
            }
            return try await self.priority(rest, method: method, body: nil, engine: engine, request: request, access: access)
        }
        if method == .get, request.headers[.ifMatch] != nil {
            // Firebase's REST reference: a GET with if-match is 400 "not supported".
            throw RESTError(
                status: 400, message: "if-match is not supported on GET (conditional requests are PUT and DELETE); use if-none-match for a conditional read")
        }
        let wantsETag = request.headers[Self.etagRequest]?.lowercased() == "true"
        switch method {
        case .get:
            if Self.wantsEventStream(request.headers) {
                return try await self.stream(rest, engine: engine, headers: request.headers, identity: identity, channel: channel)
            }
            return try await self.get(rest, engine: engine, headers: request.headers, access: access)
        case .delete:
            return try await self.write(
                .remove(rest.path), rest, engine: engine, ifMatch: request.headers[.ifMatch], wantsETag: wantsETag, access: access)
        case .put, .post, .patch:
            return try await self.withBody(request) { body in
                try await self.write(method, body: body, rest, engine: engine, request: request, access: access)
            }
        }
    }

    /// A PUT, POST or PATCH with its body.
    private func write(
        _ method: RESTRequest.Method, body: ByteBuffer, _ rest: RESTRequest, engine: Engine, request: Request, access: Access
    ) async throws -> Response {
        let parsed: (operation: WriteOperation, ifMatch: String?, wantsETag: Bool)
        do {
            parsed = try Self.parseWrite(method, body: body, rest, headers: request.headers)
        } catch {
            engine.recordRefusedWrite(error)
            throw RESTError(error)
        }
        return try await self.write(parsed.operation, rest, engine: engine, ifMatch: parsed.ifMatch, wantsETag: parsed.wantsETag, access: access)
    }

    /// The write a PUT, POST or PATCH asks for, with its if-match and whether it wants an ETag.
    static func parseWrite(
        _ method: RESTRequest.Method, body: ByteBuffer, _ rest: RESTRequest, headers: HTTPFields
    ) throws(EddyError) -> (operation: WriteOperation, ifMatch: String?, wantsETag: Bool) {
        let wantsETag = headers[Self.etagRequest]?.lowercased() == "true"
        // Conditional requests are PUT and DELETE (Firebase's); applying a PATCH or POST
        // unconditionally would lose the update the client meant to guard.
        if method != .put, headers[.ifMatch] != nil {
            throw EddyError(
                .invalidArgument,
                "if-match is supported on PUT and DELETE only (conditional requests); this \(method.rawValue) was not applied. Read with X-Firebase-ETag: true and PUT the location instead")
        }
        // "You can request an ETag with any method other than PATCH" (an update's ETag
        // would be of the changes, not of a location).
        if method == .patch, wantsETag {
            throw EddyError(
                .invalidArgument, "X-Firebase-ETag is not supported on PATCH; this PATCH was not applied. Send it without the header, or PUT the location")
        }
        guard body.readableBytes > 0 else {
            throw EddyError(.invalidJSON, "request body is empty; send a JSON value")
        }
        let value = try JSONParser.parse(Array(body.readableBytesView))
        switch method {
        case .put: return (.set(rest.path, value), headers[.ifMatch], wantsETag)
        case .post: return (.push(rest.path, value), nil, wantsETag)
        default: return (try WriteOperation.update(at: rest.path, body: value), nil, false)
        }
    }

    private static func method(of request: Request) throws(RESTError) -> RESTRequest.Method {
        var name = request.method.rawValue
        if name == "POST", let override = request.headers[methodOverride] ?? Self.methodOverrideParameter(request.uri.query) {
            name = override.uppercased()
        }
        guard let method = RESTRequest.Method(rawValue: name) else {
            throw RESTError(status: 405, message: "method \(name) is not allowed; use GET, PUT, POST, PATCH or DELETE")
        }
        return method
    }

    /// The `x-http-method-override` query parameter (Firebase's REST reference: "You can also use
    /// the x-http-method-override query parameter"), its name in any case; nil without one.
    static func methodOverrideParameter(_ query: String?) -> String? {
        guard let query, query.utf8.count >= 22 else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0].lowercased() == "x-http-method-override" else { continue }
            return try? PercentDecoding.decode(parts[1], what: "x-http-method-override")
        }
        return nil
    }

    /// The credential of `Authorization: Bearer <token>` (Firebase's REST clients also send
    /// `Authorization: Bearer owner` in emulator mode); nil without one.
    static func credential(_ headers: HTTPFields) -> String? {
        Self.credential(authorization: headers[.authorization])
    }

    /// The credential of an `Authorization` header's value.
    static func credential(authorization: String?) -> String? {
        guard let value = authorization else { return nil }
        // Byte-wise throughout: Foundation's trimming and a generic split were visible costs
        // per request on a 300-byte token (perf under rules-bench.sh).
        let bytes = value.utf8
        var start = bytes.startIndex
        for expected in "bearer".utf8 {
            guard start != bytes.endIndex, bytes[start] | 0x20 == expected else { return nil }
            start = bytes.index(after: start)
        }
        guard start != bytes.endIndex, bytes[start] == UInt8(ascii: " ") else { return nil }
        while start != bytes.endIndex, bytes[start] == UInt8(ascii: " ") { start = bytes.index(after: start) }
        var end = bytes.endIndex
        while end != start {
            let before = bytes.index(before: end)
            guard bytes[before] == UInt8(ascii: " ") || bytes[before] == UInt8(ascii: "\t") else { break }
            end = before
        }
        guard start != end else { return nil }
        return String(value[start..<end])
    }

    private func get(_ rest: RESTRequest, engine: Engine, headers: HTTPFields, access: Access) async throws -> Response {
        let started = ContinuousClock.now
        let wantsETag = headers[Self.etagRequest]?.lowercased() == "true"
        if rest.shallow, wantsETag || headers[.ifNoneMatch] != nil {
            // An ETag of the shallow form would never match the data in a later if-match.
            throw RESTError(status: 400, message: "shallow=true cannot be combined with ETags (X-Firebase-ETag, if-none-match)")
        }
        if let query = rest.query, !wantsETag, headers[.ifNoneMatch] == nil, rest.print == .normal, !rest.export {
            // The common case: the answer's JSON comes straight from covered index entries.
            let body: [UInt8]
            do {
                body = try await engine.queryJSON(rest.path, query, access: access)
            } catch {
                throw RESTError(error)
            }
            try Self.checkTimeout(rest, since: started)
            return Response(status: .ok, headers: Self.jsonHeaders(rest), body: ResponseBody(byteBuffer: Self.jsonBody(body, rest)))
        }
        // format=export renders from the value: the streamed writer renders arrays.
        if rest.query == nil, !rest.shallow, !wantsETag, headers[.ifNoneMatch] == nil, rest.print != .silent, !rest.export {
            return try await self.streamedGet(rest, engine: engine, access: access, started: started)
        }
        // An ETag covers the priorities (as Firebase's hash does), so it is of the export form.
        let ifNoneMatch = headers[.ifNoneMatch]
        let export = rest.export || wantsETag || ifNoneMatch != nil
        var value: Value
        do {
            if let query = rest.query {
                value = export ? try await engine.queryExport(rest.path, query, access: access) : try await engine.query(rest.path, query, access: access)
            } else if rest.shallow {
                value = try await engine.getShallow(rest.path, access: access)
            } else {
                value = export ? try await engine.getExport(rest.path, access: access) : try await engine.get(rest.path, access: access)
            }
        } catch {
            throw RESTError(error)
        }
        try Self.checkTimeout(rest, since: started)
        let etag = wantsETag || ifNoneMatch != nil ? ETag.of(value) : nil
        if !rest.export { value = value.withoutPriorities }
        if let ifNoneMatch, ifNoneMatch == etag {
            return Response(status: .notModified, headers: [.eTag: ifNoneMatch])
        }
        return Self.json(value, rest, etag: etag)
    }

    /// A whole-value GET: written straight from the tree, never built as a `Value`. An answer
    /// of at most `streamFirstChunkBytes` goes out with a Content-Length as before; a larger one
    /// is sent chunked, `streamChunkBytes` at a time as the client reads (the writer waits for
    /// the connection to drain), all from one snapshot. A failure mid-answer (the database
    /// closing) ends the connection, so a client never takes a cut answer for a whole one.
    /// A read past its `timeout=` is refused (400) when its answer has not started; a long
    /// answer already under way ends its connection instead (see `streamedGet`).
    private func streamedGet(_ rest: RESTRequest, engine: Engine, access: Access, started: ContinuousClock.Instant) async throws -> Response {
        let opened: (stream: TreeJSONStream, first: [UInt8])
        do {
            opened = try await engine.openJSONStream(
                rest.path, pretty: rest.print == .pretty, access: access, firstChunkBytes: Self.streamFirstChunkBytes)
        } catch {
            throw RESTError(error)
        }
        try Self.checkTimeout(rest, since: started)
        let headers = Self.jsonHeaders(rest)
        let stream = opened.stream
        if stream.isFinished {
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: Self.jsonBody(opened.first, rest)))
        }
        let first = opened.first
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                if let callback = rest.callback { try await writer.write(ByteBuffer(string: callback + "(")) }
                try await writer.write(ByteBuffer(bytes: first))
                while let chunk = try await engine.nextChunk(of: stream, bytesMax: Self.streamChunkBytes) {
                    // Thrown mid-answer: the connection ends, so the client never takes a cut answer for a whole one.
                    try Self.checkTimeout(rest, since: started)
                    try await writer.write(ByteBuffer(bytes: chunk))
                }
                if rest.callback != nil { try await writer.write(ByteBuffer(string: ");")) }
                try await writer.finish(nil)
            })
    }

    /// 400 when the read has taken longer than the request's `timeout=`.
    static func checkTimeout(_ rest: RESTRequest, since started: ContinuousClock.Instant) throws(RESTError) {
        guard let timeout = rest.timeout else { return }
        let elapsed = ContinuousClock.now - started
        guard elapsed > timeout else { return }
        let milliseconds = { (d: Duration) in d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000 }
        throw RESTError(
            status: 400, message: "the read took \(milliseconds(elapsed)) ms, longer than timeout= allows (\(milliseconds(timeout)) ms); nothing was answered")
    }

    /// JSON, or JavaScript for a JSONP answer (`callback=`).
    static func jsonHeaders(_ rest: RESTRequest) -> HTTPFields {
        var headers: HTTPFields
        if rest.callback != nil {
            headers = [.contentType: "application/javascript; charset=utf-8", .init("X-Content-Type-Options")!: "nosniff"]
        } else {
            headers = [.contentType: "application/json; charset=utf-8"]
        }
        // Firebase's download=: GET only.
        if let download = rest.download, rest.method == .get {
            headers[.contentDisposition] = "attachment; filename=\"\(download)\""
        }
        return headers
    }

    /// The answer's JSON, as `callback(<json>);` for a JSONP answer.
    static func jsonBody(_ json: [UInt8], _ rest: RESTRequest) -> ByteBuffer {
        guard let callback = rest.callback else { return ByteBuffer(bytes: json) }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(callback.utf8.count + json.count + 3)
        buffer.writeString(callback)
        buffer.writeString("(")
        buffer.writeBytes(json)
        buffer.writeString(");")
        return buffer
    }

    /// Answers up to this size are built whole and sent with a Content-Length.
    static let streamFirstChunkBytes = 1 << 20
    /// The pieces of a larger answer.
    static let streamChunkBytes = 256 << 10

    /// `wantsETag` (X-Firebase-ETag: true) or `ifMatch` add the written data's `ETag`, as
    /// Firebase's REST reference lists: of the put data, of the posted data, of null.
    private func write(
        _ operation: WriteOperation, _ rest: RESTRequest, engine: Engine, ifMatch: String?, wantsETag: Bool, access: Access
    ) async throws -> Response {
        let outcome: WriteOutcome
        do {
            outcome = try await engine.write(operation, ifMatch: ifMatch, access: access)
        } catch {
            throw RESTError(error)
        }
        var readable = true
        if case .committed(let committed) = outcome {
            do {
                try await self.replication.confirm(committed.logID, namespace: rest.namespace)
            } catch {
                throw RESTError(error)
            }
            // An increment resolves against the stored number: the result (and its ETag) is
            // answered only to a caller who may read the location; a write-only caller gets the
            // values as it sent them, with no ETag.
            if !access.isAdmin, Self.sentValues(of: operation) != nil {
                let location = rest.path
                readable = try await engine.onReaderPublic { engine.canRead(location, query: nil, access) }
            }
        }
        return Self.writeAnswer(outcome, operation, rest, ifMatch: ifMatch, wantsETag: wantsETag, readable: readable).response
    }

    /// The answer to a write with `outcome` (committed and, under `--sync-followers`,
    /// confirmed). `readable`: the caller may read the location (else an increment's written
    /// values are answered as sent, with no ETag).
    static func writeAnswer(
        _ outcome: WriteOutcome, _ operation: WriteOperation, _ rest: RESTRequest, ifMatch: String?, wantsETag: Bool, readable: Bool
    ) -> RESTAnswer {
        switch outcome {
        case .preconditionFailed(let current, let etag):
            // The current value as a GET of this request's form would answer it.
            let body = rest.export ? current : current.withoutPriorities
            return Self.jsonAnswer(body, rest, status: .preconditionFailed, etag: etag, ignoreSilent: true)
        case .committed(let committed):
            // Of the location's new state, priorities included (a set or push leaves exactly
            // what it wrote there).
            var newETag = ifMatch == nil && !wantsETag ? nil : ETag.of(committed.exportValue)
            var written = committed.value
            if !readable, let sent = Self.sentValues(of: operation) {
                written = sent
                newETag = nil
            }
            var answer: RESTAnswer
            switch operation {
            case .push: answer = Self.jsonAnswer(.object(["name": .string(committed.pushedKey!)]), rest, etag: newETag)
            case .remove: answer = Self.jsonAnswer(.null, rest, etag: newETag)
            case .set, .update: answer = Self.jsonAnswer(written, rest, etag: newETag)
            }
            // Beyond Firebase: the write's log id, so a client can tell when a stream has passed it.
            answer.headers[Self.logIDHeader] = committed.logID.rawValue
            return answer
        }
    }

    /// The values a set or update sent, as sent, when one of them holds an increment (whose
    /// result depends on the stored number); nil otherwise.
    static func sentValues(of operation: WriteOperation) -> Value? {
        func increments(_ value: Value) -> Bool {
            if case .increment = WriteValidator.serverValue(value) { return true }
            guard case .object(let children) = value else { return false }
            return children.values.contains(where: increments)
        }
        switch operation {
        case .set(_, let value):
            return increments(value) ? value : nil
        case .update(_, let changes):
            guard changes.contains(where: { increments($0.value) }) else { return nil }
            return .object(Dictionary(changes.map { (String($0.path.description.dropFirst()), $0.value) }, uniquingKeysWith: { first, _ in first }))
        case .push, .remove:
            return nil
        }
    }

    /// `<path>/.priority.json`: Firebase's "virtual child" holding a location's priority. GET
    /// answers it (null when none, or when nothing is stored there); PUT sets it (a number, a
    /// string, null or `{".sv": "timestamp"}`; on an empty location it stores nothing, as
    /// Firebase keeps no priority there); DELETE removes it. Access is the location's.
    private func priority(
        _ rest: RESTRequest, method: RESTRequest.Method, body: ByteBuffer?, engine: Engine, request: Request, access: Access
    ) async throws -> Response {
        let headers = request.headers
        let wantsETag = headers[Self.etagRequest]?.lowercased() == "true"
        switch method {
        case .get where !Self.wantsEventStream(headers):
            let priority: Value
            do {
                priority = try await engine.priority(rest.path, access: access)
            } catch {
                throw RESTError(error)
            }
            return Self.json(priority, rest, etag: wantsETag ? ETag.of(priority) : nil)
        case .put, .delete:
            guard !rest.path.isRoot else {
                throw RESTError(status: 400, message: "the root has no priority to write; write a priority at a child location")
            }
            var value = Value.null
            if method == .put {
                do throws(EddyError) {
                    guard let body, body.readableBytes > 0 else { throw EddyError(.invalidJSON, "request body is empty; send a JSON value") }
                    value = try JSONParser.parse(Array(body.readableBytesView))
                } catch {
                    engine.recordRefusedWrite(error)
                    throw RESTError(error)
                }
            }
            return try await self.write(
                .set(rest.path.appending(Value.priorityKey), value), rest, engine: engine, ifMatch: nil, wantsETag: false, access: access)
        default:
            let what = method == .get ? "listened to (it changes with its location: listen there)" : "written with \(method.rawValue) (use PUT or DELETE)"
            throw RESTError(status: 400, message: "\(rest.path)/.priority cannot be \(what)")
        }
    }

    /// `GET` answers the rules document; `PUT` replaces it (validated first) and answers
    /// `{"status": "ok"}`, as the Firebase emulator does. The admin's only (checked by the caller).
    /// A refused document is 400 naming the rule, its line and column in the document.
    private func rules(_ rest: RESTRequest, engine: Engine, request: inout Request) async throws -> Response {
        switch rest.method {
        case .get:
            do {
                return Self.json(try engine.rules().json, rest)
            } catch {
                throw RESTError(error)
            }
        case .put:
            try await self.withBody(request) { body in
                // Comments, as Firebase's rules documents have them, are blanked in place.
                let original = Array(body.readableBytesView)
                // Refused before it is parsed: parsing and compiling a large document holds a
                // thread every request shares.
                guard original.count <= Limits.rulesDocumentBytesMax else {
                    throw RESTError(
                        status: 400,
                        message:
                            "the rules document is \(original.count) bytes; rulesDocumentBytesMax is \(Limits.rulesDocumentBytesMax) (Firebase's 256 KB rules size limit)")
                }
                let text = RulesComments.blanked(original)
                do throws(EddyError) {
                    _ = try await engine.setRules(try JSONParser.parse(text))
                } catch {
                    throw RESTError(RulesDocumentPosition.locate(error, in: text, original: original))
                }
            }
            return Self.json(.object(["status": .string("ok")]), rest)
        case .post, .patch, .delete:
            throw RESTError(status: 405, message: "rules are read with GET and replaced with PUT")
        }
    }

    /// `GET /.status.json`: the storage state (`EngineHealth`), the role, and the last log id.
    /// `writable` is false on a follower too (clients write to its leader). Always 200: this
    /// reports; it does not judge (`state` says what is wrong).
    private func status(_ rest: RESTRequest, engine: Engine) throws(RESTError) -> Response {
        guard rest.method == .get else { throw RESTError(status: 405, message: "/.status is read-only (GET)") }
        let health = engine.health
        var status = health.json
        let last: LogID?
        do {
            last = try engine.lastLogID()
        } catch {
            throw RESTError(error)
        }
        let role: String
        if case .follower(let service) = self.replication {
            role = "follower"
            status["writable"] = .bool(false)
            if status["reason"] == .null {
                status["reason"] = .string("a read-only follower of the leader at \(service.leader); writes go there")
            }
        } else {
            role = "leader"
        }
        status["role"] = .string(role)
        status["namespace"] = .string(rest.namespace)
        status["databaseId"] = .string(engine.databaseID)
        status["last"] = last.map { .string($0.rawValue) } ?? .null
        return Self.json(.object(status), rest, ignoreSilent: true)
    }

    private static func info(_ rest: RESTRequest) throws(RESTError) -> Response {
        guard rest.method == .get else {
            throw RESTError(status: 400, message: "Can't modify data under /.info/")
        }
        let info: Value = .object(["connected": .bool(true), "serverTimeOffset": .number(0)])
        return json(info.child(at: rest.path), rest)
    }

    static func healthResponse(_ health: HealthEndpoint, _ probe: HealthEndpoint.Probe, method: RESTRequest.Method) throws(RESTError) -> Response {
        guard method == .get else { throw RESTError(status: 405, message: "/.health/\(probe.rawValue) is read-only (GET)") }
        let (ok, body) = health.check(probe)
        let headers: HTTPFields = [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"]
        return Response(
            status: ok ? .ok : .serviceUnavailable, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: JSONWriter.bytes(body))))
    }

    static func metricsResponse(_ metrics: MetricsEndpoint, method: RESTRequest.Method) throws(RESTError) -> Response {
        guard method == .get else { throw RESTError(status: 405, message: "/metrics is read-only (GET)") }
        let headers: HTTPFields = [.contentType: MetricsEndpoint.contentType, .cacheControl: "no-store"]
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.render())))
    }

    static func json(
        _ value: Value, _ rest: RESTRequest, status: HTTPResponse.Status = .ok, etag: String? = nil,
        ignoreSilent: Bool = false
    ) -> Response {
        Self.jsonAnswer(value, rest, status: status, etag: etag, ignoreSilent: ignoreSilent).response
    }

    static func jsonAnswer(
        _ value: Value, _ rest: RESTRequest, status: HTTPResponse.Status = .ok, etag: String? = nil,
        ignoreSilent: Bool = false
    ) -> RESTAnswer {
        var headers = Self.jsonHeaders(rest)
        if let etag { headers[.eTag] = etag }
        if rest.print == .silent, !ignoreSilent {
            return RESTAnswer(status: .noContent, headers: headers, body: nil)
        }
        let bytes = JSONWriter.bytes(value, pretty: rest.print == .pretty, arrays: !rest.export)
        return RESTAnswer(status: status, headers: headers, body: Self.jsonBody(bytes, rest))
    }

    static func error(_ error: RESTError) -> Response {
        Self.errorAnswer(error).response
    }

    static func errorAnswer(_ error: RESTError) -> RESTAnswer {
        let body = JSONWriter.bytes(.object(["error": .string(error.message)]))
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if error.status == 405 { headers[.allow] = "GET, PUT, POST, PATCH, DELETE" }
        // A refused body may still be arriving (over request-bytes-max) or its framing is broken
        // (400 from the parser): the rest of the connection cannot be read as requests, so it
        // ends here.
        if error.closesConnection { headers[.connection] = "close" }
        return RESTAnswer(status: HTTPResponse.Status(code: error.status), headers: headers, body: ByteBuffer(bytes: body))
    }
}
