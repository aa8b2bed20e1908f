// The one-entry cache of large encoded values: an equal key is served without making the bytes
// again, small bytes are never kept, a new large value replaces the entry, and the entry goes
// `keptFor` after it was made (a large value no longer stays until another replaces it).

import Synchronization
import Testing

@testable import EddyServer

@Suite struct LastLargeBytesTests {
    final class Counter: Sendable {
        let made = Mutex(0)
        func make(_ count: Int) -> [UInt8] {
            self.made.withLock { $0 += 1 }
            return [UInt8](repeating: 7, count: count)
        }
        var count: Int { self.made.withLock { $0 } }
    }

    @Test func anEqualKeyIsServedFromTheEntryUntilItExpires() async throws {
        let cache = LastLargeBytes<String>(bytesMin: 100, keptFor: .milliseconds(200))
        let counter = Counter()
        #expect(cache.bytes(for: "a") { counter.make(1000) }.count == 1000)
        #expect(cache.bytes(for: "a") { counter.make(1000) }.count == 1000)
        #expect(counter.count == 1 && cache.holdsEntry)
        // Gone after its time, made again at the next call.
        let deadline = ContinuousClock.now + .seconds(10)
        while cache.holdsEntry, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(!cache.holdsEntry)
        _ = cache.bytes(for: "a") { counter.make(1000) }
        #expect(counter.count == 2)
    }

    @Test func smallBytesAreNotKeptAndANewLargeValueReplacesTheEntry() async throws {
        let cache = LastLargeBytes<String>(bytesMin: 100, keptFor: .seconds(60))
        let counter = Counter()
        _ = cache.bytes(for: "small") { counter.make(10) }
        _ = cache.bytes(for: "small") { counter.make(10) }
        #expect(counter.count == 2 && !cache.holdsEntry)
        _ = cache.bytes(for: "a") { counter.make(500) }
        _ = cache.bytes(for: "b") { counter.make(600) }
        #expect(cache.bytes(for: "b") { counter.make(600) }.count == 600)
        #expect(counter.count == 4)
        _ = cache.bytes(for: "a") { counter.make(500) }
        #expect(counter.count == 5)
    }

    @Test func anExpiryDropsOnlyItsOwnEntry() async throws {
        let cache = LastLargeBytes<String>(bytesMin: 100, keptFor: .seconds(2))
        let counter = Counter()
        let started = ContinuousClock.now
        _ = cache.bytes(for: "a") { counter.make(500) }
        try await Task.sleep(for: .milliseconds(1200))
        _ = cache.bytes(for: "b") { counter.make(500) }
        // Past a's expiry (2 s), before b's (3.2 s): b is still there.
        try await Task.sleep(until: started + .milliseconds(2300))
        _ = cache.bytes(for: "b") { counter.make(500) }
        #expect(counter.count == 2 || ContinuousClock.now - started > .milliseconds(3100))
    }
}
