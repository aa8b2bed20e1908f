// The commit queue's bounds: count, bytes per group, capacity, and refusal after stop.

import EddyModel
import Testing

@testable import EddyEngine

@Suite struct CommitQueueTests {
    private func write(_ bytes: Int) -> PendingWrite {
        PendingWrite(operation: .remove(.root), ifMatch: nil, approximateBytes: bytes, completion: { _ in })
    }

    @Test func groupsStopAtTheByteBoundButNeverEmpty() {
        do {
            let queue = CommitQueue(capacity: 10)
            for bytes in [40, 40, 40, 500, 10] { #expect(queue.enqueue(write(bytes)) == nil) }
            #expect(queue.takeGroup(max: 10, bytesMax: 100, deadline: nil)?.map(\.approximateBytes) == [40, 40])
            #expect(queue.takeGroup(max: 10, bytesMax: 100, deadline: nil)?.map(\.approximateBytes) == [40])
            // One write larger than the bound still commits, alone.
            #expect(queue.takeGroup(max: 10, bytesMax: 100, deadline: nil)?.map(\.approximateBytes) == [500])
            #expect(queue.takeGroup(max: 10, bytesMax: 100, deadline: nil)?.map(\.approximateBytes) == [10])
        }
    }

    @Test func groupsStopAtTheCountBound() {
        do {
            let queue = CommitQueue(capacity: 10)
            for _ in 0..<5 { _ = queue.enqueue(write(1)) }
            #expect(queue.takeGroup(max: 3, bytesMax: 1000, deadline: nil)?.count == 3)
            #expect(queue.takeGroup(max: 3, bytesMax: 1000, deadline: nil)?.count == 2)
        }
    }

    @Test func aFullQueueAsksWritersToWaitThenRefusesAndAStoppedQueueDrainsThenEnds() {
        do {
            let queue = CommitQueue(capacity: 2)
            #expect(queue.enqueue(write(1)) == nil)
            #expect(!queue.isFull)
            #expect(queue.enqueue(write(1)) == nil)
            #expect(queue.isFull, "at capacity: writers that can wait do")
            // The slack for waiters that woke together: refused only past twice the capacity.
            #expect(queue.enqueue(write(1)) == nil)
            #expect(queue.enqueue(write(1)) == nil)
            #expect(queue.enqueue(write(1))?.code == .busy)
            queue.stop()
            #expect(queue.enqueue(write(1))?.code == .shuttingDown)
            #expect(queue.takeGroup(max: 10, bytesMax: 1000, deadline: nil)?.count == 4, "queued writes still drain")
            #expect(queue.takeGroup(max: 10, bytesMax: 1000, deadline: nil) == nil)
        }
    }
}
