// The commit queue's bounds: count, bytes per group, capacity, and refusal after stop.

import EddyModel
import Testing

@testable import EddyEngine

@Suite struct CommitQueueTests {
    /// Runs `body` with a continuation to put in PendingWrites (resumed once at the end).
    private func withContinuation(_ body: (CheckedContinuation<Result<WriteOutcome, EddyError>, Never>) -> Void) async {
        _ = await withCheckedContinuation { (continuation: CheckedContinuation<Result<WriteOutcome, EddyError>, Never>) in
            body(continuation)
            continuation.resume(returning: .failure(EddyError(.internal, "test done")))
        }
    }

    private func write(_ bytes: Int, _ c: CheckedContinuation<Result<WriteOutcome, EddyError>, Never>) -> PendingWrite {
        PendingWrite(operation: .remove(.root), ifMatch: nil, approximateBytes: bytes, continuation: c)
    }

    @Test func groupsStopAtTheByteBoundButNeverEmpty() async {
        await withContinuation { c in
            let queue = CommitQueue(capacity: 10)
            for bytes in [40, 40, 40, 500, 10] { #expect(queue.enqueue(write(bytes, c)) == nil) }
            #expect(queue.takeGroup(max: 10, bytesMax: 100, deadline: nil)?.map(\.approximateBytes) == [40, 40])
            #expect(queue.takeGroup(max: 10, bytesMax: 100, deadline: nil)?.map(\.approximateBytes) == [40])
            // One write larger than the bound still commits, alone.
            #expect(queue.takeGroup(max: 10, bytesMax: 100, deadline: nil)?.map(\.approximateBytes) == [500])
            #expect(queue.takeGroup(max: 10, bytesMax: 100, deadline: nil)?.map(\.approximateBytes) == [10])
        }
    }

    @Test func groupsStopAtTheCountBound() async {
        await withContinuation { c in
            let queue = CommitQueue(capacity: 10)
            for _ in 0..<5 { _ = queue.enqueue(write(1, c)) }
            #expect(queue.takeGroup(max: 3, bytesMax: 1000, deadline: nil)?.count == 3)
            #expect(queue.takeGroup(max: 3, bytesMax: 1000, deadline: nil)?.count == 2)
        }
    }

    @Test func aFullQueueRefusesAndAStoppedQueueDrainsThenEnds() async {
        await withContinuation { c in
            let queue = CommitQueue(capacity: 2)
            #expect(queue.enqueue(write(1, c)) == nil)
            #expect(queue.enqueue(write(1, c)) == nil)
            #expect(queue.enqueue(write(1, c))?.code == .busy)
            queue.stop()
            #expect(queue.enqueue(write(1, c))?.code == .shuttingDown)
            #expect(queue.takeGroup(max: 10, bytesMax: 1000, deadline: nil)?.count == 2, "queued writes still drain")
            #expect(queue.takeGroup(max: 10, bytesMax: 1000, deadline: nil) == nil)
        }
    }
}
