// The `events` frame of a batch, encoded once per batch and shared by every subscriber that
// receives the same batch. The engine hands listeners that share a window the very same
// `[ChildEvent]` array, one sink after the other on one thread; so the last batch encoded is
// remembered and recognised by its storage. The frame differs between subscribers only in its
// request id (the subscription's), so the finished frame buffer is kept per request id too
// (at most `framesPerBatchMax`): subscribers whose clients numbered their subscriptions alike
// share one buffer, written to each socket without a copy or an allocation of its own.
//
// Attach batches (a subscription's first value) are each their own array, so they are
// recognised by what determines them instead (`AttachKey`): subscriptions of one namespace
// attaching to one location and query, hearing the same events in one form, current after the
// same log entry, get the same payload. 200 subscribers opening on a 12 MB location encoded it
// 200 times on the threads every request shares. One entry, replaced by the next; only payloads
// of at least `attachBytesMin` are kept.
//
// Soundness: the cache holds the array it encoded, so that storage stays alive and cannot be
// reused by another array; an array with the same storage address and count is therefore the
// same, unmodified batch (arrays share storage only while neither is mutated).

import EddyEngine
import EddyModel
import EddyProtocol
import EddyReplication
import NIOCore
import Synchronization

final class EventsPayloadCache: Sendable {
    private struct Batch {
        let events: [ChildEvent]
        let payload: [UInt8]
        var frames: [UInt64: ByteBuffer] = [:]
    }

    /// Frame buffers kept per batch (one per distinct request id).
    static let framesPerBatchMax = 16

    /// What determines an attach batch's payload. `liveAfter`: the entry it is current after.
    struct AttachKey: Equatable, Sendable {
        let engine: ObjectIdentifier
        let location: Path
        let query: Query?
        let selection: EventSelection
        let exportsPriorities: Bool
        let liveAfter: LogID
    }

    /// Smaller attach payloads are encoded again each time (cheap), so the entry holds a large one.
    static let attachBytesMin = 64 * 1024

    private let last = Mutex<Batch?>(nil)
    private let attachPayloads = LastLargeBytes<AttachKey>(bytesMin: EventsPayloadCache.attachBytesMin)
    private let allocator = ByteBufferAllocator()

    /// The payload of the attach batch `events`, which `key` determines: the last one made for
    /// that key, or `events` encoded.
    func attachPayload(for key: AttachKey, events: [ChildEvent]) -> [UInt8] {
        self.attachPayloads.bytes(for: key) { Self.encode(events) }
    }

    func payload(for events: [ChildEvent]) -> [UInt8] {
        let hit = self.last.withLock { last -> [UInt8]? in
            guard let last, Self.same(last.events, events) else { return nil }
            return last.payload
        }
        if let hit { return hit }
        let payload = Self.encode(events)
        self.last.withLock { $0 = Batch(events: events, payload: payload) }
        return payload
    }

    /// The whole `events` frame of `events` for the subscription `requestID`.
    func frame(for events: [ChildEvent], requestID: UInt64) -> ByteBuffer {
        let hit = self.last.withLock { last -> ByteBuffer? in
            guard let last, Self.same(last.events, events) else { return nil }
            return last.frames[requestID]
        }
        if let hit { return hit }
        let payload = self.payload(for: events)
        let frame = ByteBuffer.frame(Frame(kind: .events, requestID: requestID, payload: payload), allocator: self.allocator)
        self.last.withLock { last in
            guard last != nil, Self.same(last!.events, events), last!.frames.count < Self.framesPerBatchMax else { return }
            last!.frames[requestID] = frame
        }
        return frame
    }

    private static func same(_ a: [ChildEvent], _ b: [ChildEvent]) -> Bool {
        a.count == b.count && Self.storage(of: a) == Self.storage(of: b)
    }

    private static func storage(of events: [ChildEvent]) -> UnsafeRawPointer? {
        events.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
    }

    /// `{"events":[{"kind":…,"key":…,"prev":…,"value":…,"logID":…},…]}`; a value event that
    /// carries changes is `{"kind":"value","logID":…,"changes":[…]}` (see `Frame.Kind.events`).
    static func encode(_ events: [ChildEvent]) -> [UInt8] {
        var payload = Array(#"{"events":["#.utf8)
        for (i, event) in events.enumerated() {
            if i > 0 { payload.append(UInt8(ascii: ",")) }
            if let changes = event.changes {
                Self.encodeChanges(changes, logID: event.logID, into: &payload)
                continue
            }
            var object: [String: Value] = ["kind": .string(event.kind.rawValue), "value": event.value]
            if let key = event.key { object["key"] = .string(key) }
            if let previous = event.previousKey { object["prev"] = .string(previous) }
            if let id = event.logID { object["logID"] = .string(id.rawValue) }
            JSONWriter.write(.object(object), into: &payload, pretty: false, indent: 0)
        }
        payload += Array("]}".utf8)
        return payload
    }

    /// `{"kind":"value","logID":…,"changes":[{"op":"put"|"patch","path":…,"data":…},…]}`
    private static func encodeChanges(_ changes: [ValueChange], logID: LogID?, into payload: inout [UInt8]) {
        payload += Array(#"{"kind":"value","#.utf8)
        if let logID { payload += Array(#""logID":"\#(logID.rawValue)","#.utf8) }
        payload += Array(#""changes":["#.utf8)
        for (i, change) in changes.enumerated() {
            if i > 0 { payload.append(UInt8(ascii: ",")) }
            payload += Array(#"{"op":""#.utf8)
            payload += Array(change.isPatch ? "patch".utf8 : "put".utf8)
            payload += Array(#"","path":"#.utf8)
            JSONWriter.writeString(change.path.description, into: &payload)
            payload += Array(#","data":"#.utf8)
            change.writeData(into: &payload)
            payload.append(UInt8(ascii: "}"))
        }
        payload += Array("]}".utf8)
    }
}
