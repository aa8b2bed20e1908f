// Closing an engine needs no thread of Dispatch's global queue: a namespace is closed for room
// under the data directory's lock, while Swift tasks (which run on those threads on Linux) may
// all be blocked waiting for that lock. With every global thread blocked, `close` still returns.

import Dispatch
import EddyEngine
import EddyModel
import EddyTesting
import Foundation
import Testing

@Suite struct EngineCloseTests {
    @Test func closeReturnsWhileEveryGlobalDispatchThreadIsBlocked() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .sync))
        _ = try await engine.set(p("/a"), .number(1))
        // Occupy the global queue's threads (as many as cores, and more) until released.
        let release = DispatchSemaphore(value: 0)
        let blockers = 4 * ProcessInfo.processInfo.activeProcessorCount
        let started = DispatchSemaphore(value: 0)
        for _ in 0..<blockers {
            DispatchQueue.global().async {
                started.signal()
                release.wait()
            }
        }
        // Wait until the pool runs some of them (it may not run them all: that is the point).
        started.wait()
        let closed = DispatchSemaphore(value: 0)
        let closer = Thread {
            engine.close()
            closed.signal()
        }
        closer.start()
        // Not a speed bound: a close takes milliseconds (40 ms here). A close that needs a global
        // thread waits until Dispatch adds one to its blocked pool, 8 s on the 2-core VM (3 of 3
        // runs with the close before), far beyond this.
        let returned = closed.wait(timeout: .now() + 4) == .success
        for _ in 0..<blockers { release.signal() }
        if !returned { closed.wait() }
        #expect(returned, "close waited for a global Dispatch thread")
    }
}
