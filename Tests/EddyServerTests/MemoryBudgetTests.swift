// The shared byte budget of waiting events, and how an SSE buffer uses it: reservations never
// pass the bound (except the one batch a client with nothing waiting gets while the budget is
// not full), releases give it back, and a buffer the budget cannot take is cut off with its
// resume id and returns what it held.

import EddyEngine
import EddyModel
import Testing

@testable import EddyServer

@Suite struct MemoryBudgetTests {
    @Test func reservationsStayWithinTheBound() {
        let budget = MemoryBudget(bytesMax: 100)
        #expect(budget.reserve(60))
        #expect(!budget.reserve(41), "60 + 41 is past 100; nothing is taken")
        #expect(budget.usedBytes == 60)
        #expect(budget.reserve(40))
        budget.release(100)
        #expect(budget.usedBytes == 0)
        #expect(budget.reserve(500, evenPast: true), "a client's only batch always gets through")
        #expect(!budget.reserve(1), "and still counts against everyone else")
        budget.release(500)
        #expect(budget.reserve(100))
    }

    @Test func aFirstValuePassesTheBoundOnlyWhileTheBudgetIsNotFull() {
        let budget = MemoryBudget(bytesMax: 100)
        #expect(budget.reserve(60))
        #expect(budget.reserveUnlessFull(500), "60 of 100 taken: a large first value still gets through")
        #expect(budget.isFull && budget.usedBytes == 560)
        #expect(!budget.reserveUnlessFull(1), "full: the next first value is refused")
        #expect(budget.usedBytes == 560, "nothing taken by the refusal")
        budget.release(560)
        #expect(!budget.isFull && budget.reserveUnlessFull(1))
    }

    @Test func aStreamWhoseFirstValueFindsTheBudgetFullIsRefusedBeforeItStarts() async {
        let budget = MemoryBudget(bytesMax: 1_000)
        #expect(budget.reserveUnlessFull(5_000))  // a stalled reader's large write
        let buffer = EventBuffer(batchesMax: 10, bytesMax: 1 << 20, budget: budget)
        buffer.push(self.batch(1, bytes: 10))
        #expect(buffer.refusedItsFirstBatch)
        guard case .overflow(_, let bound)? = await buffer.next() else {
            Issue.record("not cut off")
            return
        }
        #expect(bound == .shared)
        #expect(budget.usedBytes == 5_000)
        budget.release(5_000)
        let next = EventBuffer(batchesMax: 10, bytesMax: 1 << 20, budget: budget)
        next.push(self.batch(2, bytes: 10))
        #expect(!next.refusedItsFirstBatch, "with room again, a stream starts")
        guard case .events? = await next.next() else {
            Issue.record("the first value did not arrive")
            return
        }
    }

    @Test func anAttachBatchIsNotWalkedButStillRefusedWhenTheBudgetIsFull() async {
        let attach = [ChildEvent(kind: .value, key: nil, previousKey: nil, value: .string(String(repeating: "x", count: 5_000)), logID: nil)]
        #expect(EventBuffer.countedBytes(attach) == 0, "the stream counts its encoded first put instead")
        #expect(EventBuffer.countedBytes(self.batch(1, bytes: 5_000)) > 5_000, "live batches are measured")
        let budget = MemoryBudget(bytesMax: 1_000)
        let open = EventBuffer(batchesMax: 10, bytesMax: 1 << 20, budget: budget)
        open.push(attach)
        #expect(!open.refusedItsFirstBatch && budget.usedBytes == 0)
        guard case .events? = await open.next() else {
            Issue.record("the first value did not arrive")
            return
        }
        _ = budget.reserve(2_000, evenPast: true)  // a stalled reader's write fills it
        let late = EventBuffer(batchesMax: 10, bytesMax: 1 << 20, budget: budget)
        late.push(attach)
        #expect(late.refusedItsFirstBatch, "refused while the budget is full, though not measured")
        budget.release(2_000)
    }

    private func batch(_ n: Int, bytes: Int) -> [ChildEvent] {
        let id = LogID(String(repeating: "-", count: 19) + String(n % 10))!
        return [ChildEvent(kind: .value, key: nil, previousKey: nil, value: .string(String(repeating: "x", count: bytes)), logID: id)]
    }

    @Test func aBufferTheSharedBudgetCannotTakeIsCutOffAndGivesItsBytesBack() async {
        let budget = MemoryBudget(bytesMax: 10_000)
        let one = EventBuffer(batchesMax: 1000, bytesMax: 1 << 20, budget: budget)
        let other = EventBuffer(batchesMax: 1000, bytesMax: 1 << 20, budget: budget)
        other.push(self.batch(0, bytes: 6_000))  // waiting in the other stream
        one.push(self.batch(1, bytes: 3_000))  // alone: always taken
        one.push(self.batch(2, bytes: 3_000))  // 12,000 > 10,000: cut off
        #expect(budget.usedBytes > 6_000 && budget.usedBytes < 7_000, "only the other stream's batch is held")
        guard case .overflow(let last, let bound)? = await one.next() else {
            Issue.record("not cut off")
            return
        }
        #expect(bound == .shared, "cut off by the budget all streams share")
        #expect(last == nil, "nothing was handed out: resume where it started")
        guard case .events? = await other.next() else {
            Issue.record("the other stream lost its batch")
            return
        }
        #expect(budget.usedBytes == 0)
    }

    @Test func aFirstBatchLargerThanTheStreamBoundStillArrives() async {
        let budget = MemoryBudget(bytesMax: 1_000)
        let buffer = EventBuffer(batchesMax: 10, bytesMax: 1_000, budget: budget)
        buffer.push(self.batch(1, bytes: 50_000))  // a large location's first value
        guard case .events(let events)? = await buffer.next() else {
            Issue.record("the first value did not arrive")
            return
        }
        #expect(events.count == 1)
        #expect(budget.usedBytes == 0)
    }
}
