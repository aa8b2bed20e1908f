// The start-up barrier: readiness is announced only once every listener reported, and never
// when one failed to bind.

import EddyReplication
import Synchronization
import Testing

@Suite struct ListenersBoundTests {
    @Test func waitsForEveryListener() async {
        let bound = ListenersBound(count: 2)
        let finished = Mutex<Bool?>(nil)
        let waiter = Task {
            let result = await bound.wait()
            finished.withLock { $0 = result }
        }
        bound.report(succeeded: true)
        await Task.yield()
        #expect(finished.withLock { $0 } == nil, "one of two listeners reported: not ready yet")
        bound.report(succeeded: true)
        await waiter.value
        #expect(finished.withLock { $0 } == true)
        #expect(await bound.wait(), "a later wait answers at once")
    }

    @Test func aFailedBindIsNeverReady() async {
        let bound = ListenersBound(count: 2)
        bound.report(succeeded: false)
        bound.report(succeeded: true)
        #expect(await bound.wait() == false)
    }

    @Test func noListenersIsReady() async {
        #expect(await ListenersBound(count: 0).wait())
    }
}
