// One native-protocol connection (see EddyProtocol/Frame.swift): requests run concurrently,
// each answered with a frame carrying its request id; subscriptions are engine listeners whose
// batches become `events` frames.
//
// Ordering: a subscription's `subscribed` answer precedes its first `events` frame (the attach
// batch, which describes the state after `liveAfter`); later frames follow log order.
// Bounds: at most `outstandingMax` frames may wait to be written to the socket; a subscriber
// that lets more pile up gets `behind` (with the last log id written to it) and the connection
// closes. Closing the connection removes its listeners.

import EddyEngine
import EddyModel
import EddyProtocol
import Logging
import NIOCore
import Synchronization

final class NativeConnection: Sendable {
    private struct State {
        var subscriptions: [UInt64: (engine: Engine, id: ListenerID)] = [:]
        /// Events of a subscription that arrived before its `subscribed` answer was sent.
        var held: [UInt64: [[ChildEvent]]] = [:]
        var outstanding = 0
        var lastWritten: LogID?
        var closed = false
    }

    let channel: any Channel
    let data: DataDirectory
    let outstandingMax: Int
    let logger: Logger
    private let state = Mutex(State())

    init(channel: any Channel, data: DataDirectory, outstandingMax: Int, logger: Logger) {
        self.channel = channel
        self.data = data
        self.outstandingMax = outstandingMax
        self.logger = logger
    }

    // MARK: Sending

    private enum Admission { case send, overflow, closed }

    private func send(_ frame: Frame, logID: LogID? = nil) {
        let admission = self.state.withLock { state -> Admission in
            if state.closed { return .closed }
            guard state.outstanding < self.outstandingMax else { return .overflow }
            state.outstanding += 1
            return .send
        }
        switch admission {
        case .closed: return
        case .overflow:
            self.cutOff()
            return
        case .send: break
        }
        self.channel.writeAndFlush(ByteBuffer(bytes: frame.encoded())).whenComplete { result in
            self.state.withLock { state in
                state.outstanding -= 1
                if case .success = result, let logID { state.lastWritten = logID }
            }
        }
    }

    private func cutOff() {
        let last = self.state.withLock { state -> LogID?? in
            if state.closed { return nil }
            state.closed = true
            return .some(state.lastWritten)
        }
        guard let last else { return }
        let payload: Value = .object(["lastDelivered": last.map { .string($0.rawValue) } ?? .null])
        let frame = Frame(kind: .behind, requestID: 0, payload: JSONWriter.bytes(payload))
        self.logger.info("native subscriber fell behind; disconnecting", metadata: ["eddy.last_delivered": "\(last?.rawValue ?? "none")"])
        // Half-close after the frame: the client reads everything sent, then end of stream;
        // the connection closes fully when it does (a full close here could cut the frame off).
        self.channel.writeAndFlush(ByteBuffer(bytes: frame.encoded())).whenComplete { _ in
            self.channel.close(mode: .output, promise: nil)
        }
        self.closed()  // its listeners go now, not when the client hangs up
    }

    private func answer(_ kind: Frame.Kind, _ requestID: UInt64, _ payload: Value) {
        self.send(Frame(kind: kind, requestID: requestID, payload: JSONWriter.bytes(payload)))
    }

    private func fail(_ requestID: UInt64, _ error: EddyError) {
        self.answer(.error, requestID, .object(["code": .string(error.code.description), "message": .string(error.message)]))
    }

    func protocolError(_ error: ProtocolError) {
        self.fail(0, EddyError(.invalidArgument, error.message))
        self.channel.close(promise: nil)
    }

    // MARK: Requests

    func handle(_ frame: Frame) async {
        do throws(EddyError) {
            let body: Value
            do {
                body = try JSONParser.parse(frame.payload)
            } catch {
                throw EddyError(.invalidJSON, "frame \(frame.requestID): payload is not JSON: \(error.message)")
            }
            let engine = try self.data.engine(namespace: try Self.string(body, "ns", optional: true) ?? DataDirectory.defaultNamespace)
            switch frame.kind {
            case .get:
                self.answer(.value, frame.requestID, .object(["value": try await engine.get(try Self.path(body))]))
            case .query:
                let query = try Self.query(body) ?? Query(order: .key)
                self.answer(.value, frame.requestID, .object(["value": try await engine.query(try Self.path(body), query)]))
            case .write:
                try await self.write(frame.requestID, body, engine)
            case .subscribe:
                try await self.subscribe(frame.requestID, body, engine)
            case .unsubscribe:
                guard case .number(let n) = body["subscription"], n >= 0, n == n.rounded() else {
                    throw EddyError(
                        .invalidArgument,
                        "unsubscribe needs \"subscription\": the request id of the subscribe, not \(JSONWriter.string(body["subscription"]))")
                }
                let removed = self.state.withLock { $0.subscriptions.removeValue(forKey: UInt64(n)) }
                if let removed { await removed.engine.removeListener(removed.id) }
                self.answer(.unsubscribed, frame.requestID, .object(["subscription": .number(n), "removed": .bool(removed != nil)]))
            default:
                throw EddyError(.invalidArgument, "frame kind \(frame.kind) is sent by the server, not by clients")
            }
        } catch {
            self.fail(frame.requestID, error)
        }
    }

    private func write(_ requestID: UInt64, _ body: Value, _ engine: Engine) async throws(EddyError) {
        let path = try Self.path(body)
        let value = body["value"]
        let operation: WriteOperation
        switch try Self.string(body, "op", optional: false) {
        case "set": operation = .set(path, value)
        case "update": operation = try WriteOperation.update(at: path, body: value)
        case "push": operation = .push(path, value)
        case "remove": operation = .remove(path)
        case let op: throw EddyError(.invalidArgument, "write op \(op ?? "") is not one of set, update, push, remove")
        }
        var silenced = Set<ListenerID>()
        if case .object(let list) = body["silence"] {
            let own = self.state.withLock { $0.subscriptions }
            for case .number(let n) in list.values {
                guard let subscription = own[UInt64(n)] else {
                    throw EddyError(.invalidArgument, "silence names \(n), which is not a subscription of this connection")
                }
                silenced.insert(subscription.id)
            }
        }
        switch try await engine.write(operation, silencing: silenced) {
        case .committed(let committed):
            var answer: [String: Value] = ["logID": .string(committed.logID.rawValue)]
            if let name = committed.pushedKey { answer["name"] = .string(name) }
            self.answer(.written, requestID, .object(answer))
        case .preconditionFailed:
            throw EddyError(.preconditionFailed, "the write was conditional and the value changed")
        }
    }

    private func subscribe(_ requestID: UInt64, _ body: Value, _ engine: Engine) async throws(EddyError) {
        var since: LogID? = nil
        if let text = try Self.string(body, "since", optional: true) {
            guard let id = LogID(text) else { throw EddyError(.invalidArgument, "\"since\" \(text) is not a log id") }
            since = id
        }
        let path = try Self.path(body)
        let query = try Self.query(body)
        self.state.withLock { $0.held[requestID] = [] }
        let attachment: ListenerAttachment
        do {
            attachment = try await engine.listen(path, query: query, since: since) { events in
                let send = self.state.withLock { state -> Bool in
                    guard state.held[requestID] != nil else { return true }
                    state.held[requestID]!.append(events)
                    return false
                }
                if send { self.sendEvents(requestID, events) }
            }
        } catch {
            _ = self.state.withLock { $0.held.removeValue(forKey: requestID) }
            throw error
        }
        self.answer(
            .subscribed, requestID,
            .object(["subscription": .number(Double(requestID)), "liveAfter": attachment.liveAfter.map { .string($0.rawValue) } ?? .null])
                )
        // Release what arrived meanwhile, in order, then send directly.
        while true {
            let batches = self.state.withLock { state -> [[ChildEvent]] in
                let batches = state.held[requestID] ?? []
                if batches.isEmpty {
                    state.held.removeValue(forKey: requestID)
                    state.subscriptions[requestID] = (engine, attachment.id)
                } else {
                    state.held[requestID] = []
                }
                return batches
            }
            if batches.isEmpty { break }
            for batch in batches { self.sendEvents(requestID, batch) }
        }
    }

    private func sendEvents(_ requestID: UInt64, _ events: [ChildEvent]) {
        var list: [String: Value] = [:]
        for (i, event) in events.enumerated() {
            var object: [String: Value] = ["kind": .string(event.kind.rawValue), "value": event.value]
            if let key = event.key { object["key"] = .string(key) }
            if let previous = event.previousKey { object["prev"] = .string(previous) }
            if let id = event.logID { object["logID"] = .string(id.rawValue) }
            list[String(i)] = .object(object)
        }
        var payload = Array(#"{"events":"#.utf8)
        JSONWriter.writeArrayOfObjects(list, count: events.count, into: &payload)
        payload.append(UInt8(ascii: "}"))
        self.send(Frame(kind: .events, requestID: requestID, payload: payload), logID: events.last?.logID)
    }

    /// The connection closed (or was cut off): its listeners go.
    func closed() {
        let subscriptions = self.state.withLock { state -> [(engine: Engine, id: ListenerID)] in
            state.closed = true
            defer { state.subscriptions.removeAll() }
            return Array(state.subscriptions.values)
        }
        guard !subscriptions.isEmpty else { return }
        Task {
            for subscription in subscriptions { await subscription.engine.removeListener(subscription.id) }
        }
    }

    // MARK: Payload fields

    private static func string(_ body: Value, _ name: String, optional: Bool) throws(EddyError) -> String? {
        switch body[name] {
        case .string(let s): return s
        case .null where optional: return nil
        default: throw EddyError(.invalidArgument, "field \"\(name)\" must be a string, not \(JSONWriter.string(body[name]))")
        }
    }

    private static func path(_ body: Value) throws(EddyError) -> Path {
        try Path(try self.string(body, "path", optional: false)!)
    }

    /// `"query": {"orderBy": "\"s\"", "limitToFirst": "2"}` with the REST parameter texts.
    private static func query(_ body: Value) throws(EddyError) -> Query? {
        guard case .object(let parameters) = body["query"] else {
            if body["query"].isNull { return nil }
            throw EddyError(.invalidArgument, "field \"query\" must be an object of REST query parameters, not \(JSONWriter.string(body["query"]))")
        }
        var builder = QueryParameters()
        for (name, value) in parameters {
            guard QueryParameters.names.contains(name) else {
                throw EddyError(.invalidArgument, "query parameter \(name) is not one of \(QueryParameters.names.sorted().joined(separator: ", "))")
            }
            guard case .string(let text) = value else {
                throw EddyError(
                    .invalidArgument, "query parameter \(name) must be its REST text (e.g. \"\\\"age\\\"\"), not \(JSONWriter.string(value))")
            }
            try builder.add(name, text)
        }
        return try builder.build()
    }
}

extension JSONWriter {
    /// Writes `count` objects keyed "0"... as a JSON array (never as an object).
    static func writeArrayOfObjects(_ list: [String: Value], count: Int, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for i in 0..<count {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONWriter.write(list[String(i)]!, into: &out, pretty: false, indent: 0)
        }
        out.append(UInt8(ascii: "]"))
    }
}
