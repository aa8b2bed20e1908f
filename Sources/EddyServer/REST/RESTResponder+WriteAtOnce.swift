// Small REST writes answered from the event loop that read them (`RESTWriteAtOnceHandler`),
// without Hummingbird's request task: the same checks, the same write and the same answer
// (`RESTResponder.parseWrite`, `writeAnswer`) as the responder's, minus a task, its hops to the
// Swift executor and back, and the request's async body. Native writes take the same shortcut
// (`NativeConnection.handleWriteAtOnce`).
//
// Only a request that needs nothing that could wait takes it: a PUT, POST or PATCH with a
// `Content-Length` of at most `writeAtOnceBytesMax`, on an open namespace whose commit queue has
// room, from a caller whose credential is already known, with a body that parses. Every other
// request, and any of these that turns out otherwise, goes to the responder as before; nothing
// of a request handed back was applied or counted.

import EddyEngine
import EddyModel
import EddyReplication
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore

extension RESTResponder {
    /// The largest body a write answered at once may have (larger ones are parsed on a task,
    /// off the event loop).
    static let writeAtOnceBytesMax = 16 << 10

    /// A request head that may be answered at once, with what its answer needs. The caller owns
    /// `lease` and `reservedBytes` (of `budget`) until it calls `finishWriteAtOnce` or
    /// `giveBack()`.
    struct WriteAtOnce: Sendable {
        let method: RESTRequest.Method
        let rest: RESTRequest
        let access: Access
        let lease: EngineLease
        let reservedBytes: Int
        /// The request bodies' budget (`bodyBudget`).
        let budget: MemoryBudget

        /// Gives back the namespace's lease and the body's bytes.
        func giveBack() {
            self.lease.release()
            self.budget.release(self.reservedBytes)
        }
    }

    /// Whether any write is answered at once: not with `--log-requests` (the responder logs
    /// each request), nor on a node that redirects or does not take writes.
    var answersWritesAtOnce: Bool {
        guard !self.logRequests, self.writeRedirect == nil, case .leader(_, _, _) = self.replication else { return false }
        return true
    }

    /// At a request's head: the write it asks for when it can be answered at once; nil hands the
    /// request to the responder (holding nothing).
    func beginWriteAtOnce(_ head: HTTPRequest) -> WriteAtOnce? {
        guard self.answersWritesAtOnce else { return nil }
        let method: RESTRequest.Method
        switch head.method {
        case .put: method = .put
        case .post: method = .post
        case .patch: method = .patch
        default: return nil
        }
        // One pass over the headers (a lookup of a name the request has joins its values into a
        // new string). CORS answers, a method override, an interim 100 and a connection to close
        // (any `Connection` but keep-alive) are the responder's (and Hummingbird's).
        var length: Int?
        var connection = 0
        var authorization: String?
        for field in head.headerFields {
            switch field.name {
            case .origin, .expect, .transferEncoding, Self.methodOverride: return nil
            case .connection:
                connection += 1
                guard connection == 1, field.value.lowercased() == "keep-alive" else { return nil }
            case .contentLength:
                guard length == nil, let value = Int(field.value) else { return nil }
                length = value
            case .authorization:
                guard authorization == nil else { return nil }
                authorization = field.value
            default: break
            }
        }
        guard let length, length > 0, length <= min(Self.writeAtOnceBytesMax, self.requestBytesMax) else { return nil }
        let uri = URI(head.path ?? "/")
        if method == .post, Self.methodOverrideParameter(uri.query) != nil { return nil }
        // Without an Origin, the origin policy checks the Host only.
        if let host = head.authority, !self.origins.allowsHost(host) { return nil }
        guard let rest = try? RESTRequest(method: method, rawPath: uri.path, rawQuery: uri.query),
            !rest.isInfo, !rest.isStatus, !rest.isOnDisconnect, !rest.isRules, !rest.isFollowers, !rest.isIndexes, !rest.isPriority,
            rest.query == nil,
            // A credential not verified yet waits for its keys: the responder's.
            let identity = try? self.authenticator.identifyWithoutVerifying(
                credential: Self.credential(authorization: authorization) ?? rest.credential, override: rest.authOverride)
        else { return nil }
        guard let lease = self.data.leaseIfOpen(namespace: rest.namespace) else { return nil }
        guard lease.engine.hasCommitRoom, self.bodyBudget.reserve(length) else {
            lease.release()
            return nil
        }
        return WriteAtOnce(method: method, rest: rest, access: identity.access, lease: lease, reservedBytes: length, budget: self.bodyBudget)
    }

    /// With the request's whole body: submits the write and calls `answer` (on any thread) once
    /// it is durable (and confirmed, under `--sync-followers`), with a function that makes the
    /// answer: the caller makes it where it writes it (the event loop), not on the thread that
    /// acknowledges writes, whose next fsync waits for it. False when the request must go to the
    /// responder after all: a body that does not parse (the responder refuses it and counts the
    /// refusal once), or a commit queue that filled since the head (the responder waits for
    /// room); `write` is given back either way.
    func finishWriteAtOnce(
        _ write: WriteAtOnce, head: HTTPRequest, body: ByteBuffer,
        answer: @escaping @Sendable (_ make: @escaping @Sendable () -> RESTAnswer) -> Void
    ) -> Bool {
        let engine = write.lease.engine
        let rest = write.rest
        // A body that does not parse goes to the responder, which refuses it and counts that once.
        guard let (operation, ifMatch, wantsETag) = try? Self.parseWrite(write.method, body: body, rest, headers: head.headerFields),
            // The result of an increment is answered only to a caller who may read it; asking
            // the rules waits for a reader.
            write.access.isAdmin || Self.sentValues(of: operation) == nil,
            // A full commit queue: the responder waits for room, where a submit is refused.
            engine.hasCommitRoom
        else {
            write.giveBack()
            return false
        }
        ServerMetrics.restWriteAtOnce()
        // Not `self` in the closures: a copy of the responder retains each of its parts.
        let replication = self.replication
        let logger = self.logger
        let finish: @Sendable (@escaping @Sendable () -> RESTAnswer) -> Void = { make in
            write.giveBack()
            answer(make)
        }
        do {
            try engine.submit(operation, ifMatch: ifMatch, access: write.access) { result in
                switch result {
                case .failure(let error):
                    finish { Self.failureAnswer(RESTError(error), logger: logger) }
                case .success(let outcome):
                    let made: @Sendable () -> RESTAnswer = {
                        Self.writeAnswer(outcome, operation, rest, ifMatch: ifMatch, wantsETag: wantsETag, readable: true)
                    }
                    guard case .committed(let committed) = outcome else {
                        finish(made)
                        return
                    }
                    replication.confirm(committed.logID, namespace: rest.namespace) { confirmed in
                        switch confirmed {
                        case .success: finish(made)
                        case .failure(let error): finish { Self.failureAnswer(RESTError(error), logger: logger) }
                        }
                    }
                }
            }
        } catch {
            // Refused by the engine (and counted there), as the responder's write would be.
            finish { Self.failureAnswer(RESTError(error), logger: logger) }
        }
        return true
    }
}
