// The bounded hand-off between a listener and its SSE response: batches come out in order, a
// waiting reader is woken, keep-alives interleave, a consumer that falls too far behind is cut
// off with the last id it was handed (never silently skipped), and finish ends the stream.
// Also the SSE frames of a batch.

import EddyEngine
import EddyModel
import Testing

@testable import EddyServer

@Suite struct EventBufferTests {
    private func batch(_ n: Int) -> [ChildEvent] {
        let id = LogID(String(repeating: "-", count: 19) + String(n % 10))!
        return [ChildEvent(kind: .value, key: nil, previousKey: nil, value: .number(Double(n)), logID: id)]
    }

    @Test func batchesComeOutInOrderAndAWaitingReaderIsWoken() async {
        let buffer = EventBuffer(batchesMax: 8)
        buffer.push(self.batch(1))
        buffer.push(self.batch(2))
        guard case .events(let first)? = await buffer.next(), case .events(let second)? = await buffer.next() else {
            Issue.record("no events")
            return
        }
        #expect(first[0].value == .number(1) && second[0].value == .number(2))
        async let waiting = buffer.next()
        try? await Task.sleep(for: .milliseconds(20))
        buffer.push(self.batch(3))
        guard case .events(let third)? = await waiting else {
            Issue.record("not woken")
            return
        }
        #expect(third[0].value == .number(3))
        buffer.pushKeepAlive()
        guard case .keepAlive? = await buffer.next() else {
            Issue.record("no keep-alive")
            return
        }
        buffer.finish()
        #expect(await buffer.next() == nil)
    }

    @Test func aConsumerTooFarBehindIsCutOffWithItsLastID() async {
        let buffer = EventBuffer(batchesMax: 4)
        buffer.push(self.batch(1))
        guard case .events? = await buffer.next() else {
            Issue.record("no events")
            return
        }
        for n in 2...10 { buffer.push(self.batch(n)) }  // more than 4 waiting
        guard case .overflow(let last, let bound)? = await buffer.next() else {
            Issue.record("no overflow")
            return
        }
        #expect(last == self.batch(1)[0].logID, "resume after the last batch handed out")
        #expect(bound == .batches, "the bound it passed, for the client's message")
        #expect(await buffer.next() == nil)
        buffer.push(self.batch(11))
        #expect(await buffer.next() == nil, "nothing after the cut")
    }

    @Test func aConsumerWithTooManyBytesWaitingIsCutOffNamingTheBytes() async {
        let buffer = EventBuffer(batchesMax: 1000, bytesMax: 10_000)
        // Live batches (with log ids): an attach batch is not measured (`EventBuffer.countedBytes`).
        let big = [
            ChildEvent(kind: .value, key: nil, previousKey: nil, value: .string(String(repeating: "x", count: 4_000)), logID: LogID("-------------------1"))
        ]
        for _ in 0..<4 { buffer.push(big) }  // 3 fit in 10,000 bytes, the 4th does not
        guard case .overflow(_, let bound)? = await buffer.next() else {
            Issue.record("no overflow")
            return
        }
        #expect(bound == .bytes)
    }

    @Test func framesOfABatch() throws {
        let id = LogID("-P6w9rLoYPqTtHabcJnT")!
        func frames(_ changes: [ValueChange]) -> String {
            String(decoding: SSEFrames.frames(for: [ChildEvent(kind: .value, key: nil, previousKey: nil, value: .null, logID: id, changes: changes)]), as: UTF8.self)
        }
        let deep = try Path("a\"b/c")
        #expect(frames([.put(path: deep, value: .number(1))]) == "event: put\nid: -P6w9rLoYPqTtHabcJnT\ndata: {\"path\":\"/a\\\"b/c\",\"data\":1}\n\n")
        // Patch members in Firebase key order (integer-like keys first); several frames, one id.
        let two = frames([
            .patch(path: try Path("list"), children: ["b": .string("x"), "10": .null, "2": .number(2)]),
            .put(path: .root, value: .null),
        ])
        #expect(
            two == "event: patch\nid: -P6w9rLoYPqTtHabcJnT\ndata: {\"path\":\"/list\",\"data\":{\"2\":2,\"10\":null,\"b\":\"x\"}}\n\n"
                + "event: put\nid: -P6w9rLoYPqTtHabcJnT\ndata: {\"path\":\"/\",\"data\":null}\n\n")
        // A batch without value changes (e.g. attach, handled by the stream) has no frames here.
        #expect(SSEFrames.frames(for: [ChildEvent(kind: .value, key: nil, previousKey: nil, value: .number(1), logID: nil)]).isEmpty)
    }
}

extension EventBuffer.Item: Equatable {
    public static func == (a: EventBuffer.Item, b: EventBuffer.Item) -> Bool {
        switch (a, b) {
        case (.keepAlive, .keepAlive): return true
        case (.events(let x), .events(let y)): return x == y
        case (.overflow(let x, let xBound), .overflow(let y, let yBound)): return x == y && xBound == yBound
        default: return false
        }
    }
}
