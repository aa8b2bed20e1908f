// A listen's place in the order of writes (`ListenOrder`): taken before a write reaches the
// engine, the listen attaches before that write even when the write was queued first, and hears
// it as an event; a place never used (given up, or held and forgotten) holds writes back for a
// bounded time only.

import EddyEngine
import EddyModel
import EddyTesting
import Synchronization
import Testing

@Suite struct ListenOrderTests {
    /// The first `count` batches `received` gets (waits up to 10 s for them).
    static func batches(_ count: Int, from received: ReceivedBatches) async throws -> [[ChildEvent]] {
        var batches: [[ChildEvent]] = []
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        while batches.count < count, ContinuousClock.now < deadline {
            batches += received.take()
            if batches.count < count { try await Task.sleep(for: .milliseconds(2)) }
        }
        try #require(batches.count >= count, "got \(batches.count) batches, waited for \(count)")
        return batches
    }

    @Test(arguments: 0..<20)
    func aListenThatTookItsPlaceFirstHearsALaterQueuedWrite(_ round: Int) async throws {
        let directory = TemporaryDirectory("listen-order")
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { engine.close() }
        let location = try Path("/feed")
        _ = try await engine.set(location, .object(["a": .number(0)]))
        let order = engine.reserveListenOrder()
        // The write is queued (submit returns once it is) before the listen is made.
        let written = Mutex<Result<WriteOutcome, EddyError>?>(nil)
        try engine.submit(.set(try Path("/feed/a"), .number(1))) { result in written.withLock { $0 = result } }
        let received = ReceivedBatches()
        _ = try await engine.listen(location, order: order, sink: received.sink)
        let batches = try await Self.batches(2, from: received)
        #expect(batches[0].last?.value == .object(["a": .number(0)]), "round \(round): the first value is from before the write")
        #expect(batches[1].map(\.kind) == [.childChanged, .value], "round \(round)")
        #expect(batches[1].last?.value == .object(["a": .number(1)]))
        #expect(written.withLock { $0.map { (try? $0.get()) != nil } } == true)
    }

    @Test func aPlaceGivenUpOrForgottenHoldsWritesBackOnlyBriefly() async throws {
        let directory = TemporaryDirectory("listen-order-cancel")
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        defer { engine.close() }
        let cancelled = engine.reserveListenOrder()
        cancelled.cancel()
        _ = try await engine.set(try Path("/x"), .number(1))
        // Held and never used: the write still completes once the hold expires.
        let forgotten = engine.reserveListenOrder()
        _ = try await engine.set(try Path("/x"), .number(2))
        #expect(try await engine.get(try Path("/x")) == .number(2))
        withExtendedLifetime(forgotten) {}
        // A listen made with an expired place still attaches (after the writes), and hears on.
        let late = engine.reserveListenOrder()
        _ = try await engine.set(try Path("/x"), .number(3))
        let received = ReceivedBatches()
        _ = try await engine.listen(try Path("/x"), order: late, sink: received.sink)
        _ = try await engine.set(try Path("/x"), .number(4))
        let batches = try await Self.batches(2, from: received)
        #expect(batches[0].last?.value == .number(3))
        #expect(batches[1].last?.value == .number(4))
    }
}
