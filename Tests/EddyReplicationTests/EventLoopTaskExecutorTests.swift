// A task that prefers an event loop's task executor runs on that loop's thread from its start
// and after every suspension, whoever resumes it (a timer, another thread, a future of the loop).

import Dispatch
import NIOCore
import NIOPosix
import Testing

@testable import EddyReplication

@Suite struct EventLoopTaskExecutorTests {
    @Test func everyResumptionRunsOnTheLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loop = group.next()
        let other = group.next()
        #expect(loop !== other)
        #expect(!loop.inEventLoop, "the test itself does not start on the loop")
        let onLoop: [Bool] = try await withTaskExecutorPreference(EventLoopTaskExecutor(loop)) { () async throws -> [Bool] in
            var seen = [loop.inEventLoop]
            try await Task.sleep(for: .milliseconds(1))
            seen.append(loop.inEventLoop)
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async { continuation.resume() }
            }
            seen.append(loop.inEventLoop)
            // A future of the loop itself, completed later on the loop: no deadlock, same thread.
            try await loop.scheduleTask(in: .milliseconds(1)) {}.futureResult.get()
            seen.append(loop.inEventLoop)
            try await other.submit {}.get()
            seen.append(loop.inEventLoop)
            return seen
        }
        #expect(onLoop == [true, true, true, true, true])
        #expect(!loop.inEventLoop, "outside the preference the test runs where it ran before")
        try await group.shutdownGracefully()
    }
}
