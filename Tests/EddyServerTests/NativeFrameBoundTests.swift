// What a native connection does with an answer or an events frame longer than a client accepts
// (`Frame.fromServerBytesMax`, 1 GiB; past 4 GiB the length would not even fit the frame's
// prefix, which trapped): the request gets a `limitExceeded` error instead, a subscription
// ends with one and its listener goes, and the connection carries on. Checked with a small
// bound over an in-memory channel.

import EddyEngine
import EddyModel
import EddyProtocol
import EddyReplication
import Foundation
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import EddyServer

@Suite struct NativeFrameBoundTests {
    @Test func answersAndEventsLongerThanAFrameBecomeErrors() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("native-frame-bound-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let data = try DataDirectory(path: directory, options: EngineOptions(durability: .none), logger: logger)
        defer { data.close() }
        let channel = NIOAsyncTestingChannel()
        let connection = NativeConnection(
            channel: channel, data: data, outstandingMax: 100, outstandingBytesMax: 1 << 20, budget: MemoryBudget(bytesMax: 1 << 20),
            payloads: EventsPayloadCache(), replication: .leader(FollowerRegistry()), doorbells: CommitDoorbells(), frameBytesMax: 400,
            logger: logger)
        var decoder = FrameDecoder(lengthMax: .max)
        func next() async throws -> Frame {
            while true {
                if let frame = try decoder.next() { return frame }
                let buffer = try await channel.waitForOutboundWrite(as: ByteBuffer.self)
                decoder.append(buffer.readableBytesView)
            }
        }
        func request(_ kind: Frame.Kind, _ id: UInt64, _ json: String) async {
            await connection.handle(Frame(kind: kind, requestID: id, payload: Array(json.utf8)))
        }
        func payload(_ frame: Frame) throws -> Value { try JSONParser.parse(frame.payload) }

        let long = String(repeating: "x", count: 600)
        await request(.write, 1, #"{"op": "set", "path": "/long", "value": "\#(long)"}"#)
        #expect(try await next().kind == .written)
        await request(.write, 2, #"{"op": "set", "path": "/short", "value": "ok"}"#)
        #expect(try await next().kind == .written)

        // A read: refused while it is read, naming the location and the bound.
        await request(.get, 3, #"{"path": "/long"}"#)
        let refusedGet = try await next()
        #expect(refusedGet.kind == .error && refusedGet.requestID == 3)
        let refusal = try payload(refusedGet)
        #expect(refusal["code"] == .string("limitExceeded"))
        #expect("\(refusal["message"])".contains("/long"), "\(refusal)")
        // Any other answer: a query of it.
        await request(.query, 4, #"{"path": "/", "query": {"orderBy": "\"$key\""}}"#)
        let refusedQuery = try await next()
        #expect(refusedQuery.kind == .error && refusedQuery.requestID == 4)

        // A subscription whose first events do not fit: subscribed, then the error; its
        // listener goes, so a later write sends it nothing.
        await request(.subscribe, 5, #"{"path": "/long"}"#)
        #expect(try await next().kind == .subscribed)
        let ended = try await next()
        let endedCode = try payload(ended)["code"]
        #expect(ended.kind == .error && ended.requestID == 5 && endedCode == .string("limitExceeded"))
        // Short things still go, on the same connection.
        await request(.get, 6, #"{"path": "/short"}"#)
        let short = try await next()
        let shortValue = try payload(short)["value"]
        #expect(short.kind == .value && short.requestID == 6 && shortValue == .string("ok"))
        await request(.write, 7, #"{"op": "set", "path": "/long", "value": "y"}"#)
        let afterWrite = try await next()
        #expect(afterWrite.kind == .written && afterWrite.requestID == 7, "no events of the ended subscription: \(afterWrite)")
        await request(.subscribe, 8, #"{"path": "/long"}"#)
        #expect(try await next().kind == .subscribed)
        let events = try await next()
        #expect(events.kind == .events && events.requestID == 8)
        connection.closed()
    }
}
