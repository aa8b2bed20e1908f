// The shared `events` frames: every frame is byte for byte the frame its subscription would get
// on its own, frames of one batch for one request id share a buffer, and a new batch is never
// answered with a stale frame.

import EddyEngine
import EddyModel
import EddyProtocol
import NIOCore
import Testing

@testable import EddyServer

@Suite struct EventsPayloadCacheTests {
    private func batch(_ n: Int) -> [ChildEvent] {
        let id = LogID(String(repeating: "-", count: 19) + String(n % 10))!
        return [ChildEvent(kind: .childAdded, key: "k\(n)", previousKey: nil, value: .number(Double(n)), logID: id)]
    }

    private func bytes(_ buffer: ByteBuffer) -> [UInt8] { Array(buffer.readableBytesView) }

    private func address(_ buffer: ByteBuffer) -> UnsafeRawPointer? {
        buffer.withUnsafeReadableBytes { UnsafeRawPointer($0.baseAddress) }
    }

    @Test func framesAreExactlyTheSubscriptionsOwnAndSharedPerRequestID() {
        let cache = EventsPayloadCache()
        let events = self.batch(1)
        let payload = EventsPayloadCache.encode(events)
        var first: ByteBuffer?
        for requestID: UInt64 in [1, 7, 1, 1 << 40] {
            let frame = cache.frame(for: events, requestID: requestID)
            #expect(self.bytes(frame) == Frame(kind: .events, requestID: requestID, payload: payload).encoded())
            if requestID == 1 {
                if let first { #expect(self.address(first) == self.address(frame), "one buffer for every subscription 1") }
                first = frame
            }
        }
    }

    private func attachBatch(_ text: String) -> [ChildEvent] {
        [ChildEvent(kind: .value, key: nil, previousKey: nil, value: .object(["big": .string(text)]), logID: nil)]
    }

    @Test func attachPayloadsAreSharedByWhatDeterminesThemAndOnlyByThat() throws {
        let cache = EventsPayloadCache()
        let engine = ObjectIdentifier(cache)  // any object: the key names an engine by identity
        func key(_ location: String = "/big", query: Query? = nil, export: Bool = false, liveAfter: String = "-------------------1")
            -> EventsPayloadCache.AttachKey
        {
            EventsPayloadCache.AttachKey(
                engine: engine, location: try! Path(location), query: query, selection: .valueChangesOnly, exportsPriorities: export,
                liveAfter: LogID(liveAfter)!)
        }
        let large = String(repeating: "a", count: EventsPayloadCache.attachBytesMin)
        let first = self.attachBatch(large)
        #expect(cache.attachPayload(for: key(), events: first) == EventsPayloadCache.encode(first))
        // Another array with the same key is the same value (the cache answers without encoding:
        // a different array shows it).
        #expect(cache.attachPayload(for: key(), events: self.attachBatch("other")) == EventsPayloadCache.encode(first))
        // Anything that determines the payload differing: encoded again.
        let second = self.attachBatch(large + "b")
        for other in [key(liveAfter: "-------------------2"), key("/big2"), key(export: true), key(query: Query(order: .key))] {
            #expect(cache.attachPayload(for: other, events: second) == EventsPayloadCache.encode(second))
        }
        // Small payloads are not kept.
        let small = self.attachBatch("s")
        #expect(cache.attachPayload(for: key(liveAfter: "-------------------3"), events: small) == EventsPayloadCache.encode(small))
        #expect(cache.attachPayload(for: key(liveAfter: "-------------------3"), events: first) == EventsPayloadCache.encode(first))
    }

    @Test func aNewBatchIsNeverAnsweredWithTheLastOnesFrame() {
        let cache = EventsPayloadCache()
        for n in 0..<50 {
            let events = self.batch(n)
            // More request ids than the cache keeps per batch: the rest are encoded each time.
            for requestID in 0..<UInt64(EventsPayloadCache.framesPerBatchMax + 4) {
                let frame = cache.frame(for: events, requestID: requestID)
                #expect(self.bytes(frame) == Frame(kind: .events, requestID: requestID, payload: EventsPayloadCache.encode(events)).encoded())
            }
        }
    }
}
