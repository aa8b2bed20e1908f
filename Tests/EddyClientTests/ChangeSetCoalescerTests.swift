// Change sets handed to a full buffer are coalesced, never lost (`ChangeSetCoalescer`): a seeded
// model test (the seed is printed; rerun with EDDY_SEED) feeds random results through a buffer
// that refuses at random and checks that the consumer, applying each change set it receives as
// a batch update to its copy, always ends up with the newest results it was handed, also when
// the last change sets were refused and only the coalescer's retries bring it there.

@testable import EddyClient
import EddyModel
import EddyTesting
import Synchronization
import Testing

@Suite struct ChangeSetCoalescerTests {
    func results(_ children: [String: Double]) -> DatabaseResults {
        DatabaseResults(DataSnapshot(ref: DatabaseReference(), value: .object(children.mapValues { Value.number($0) }), order: .value))
    }

    /// The consumer's side: whether its buffer has room, what it holds, the retries scheduled.
    final class Consumer: Sendable {
        struct State {
            var room = true
            var held: [(key: String, value: Value)] = []
            var mismatch: String?
            var retries: [@Sendable () -> Void] = []
        }
        let state = Mutex(State())

        func take(_ change: DatabaseCollectionChange) -> Bool {
            self.state.withLock { state in
                guard state.room else { return false }
                switch change {
                case .initial(let results):
                    state.held = results.children.map { (key: $0.key, value: $0.data) }
                case .update(let results, let deletions, let insertions, _):
                    var keys = state.held.map(\.key)
                    for i in deletions.sorted(by: >) { keys.remove(at: i) }
                    for i in insertions.sorted() { keys.insert(results.children[i].key, at: i) }
                    if keys != results.children.map(\.key) { state.mismatch = "\(keys) != \(results.children.map(\.key))" }
                    state.held = results.children.map { (key: $0.key, value: $0.data) }
                case .error:
                    state.mismatch = "no error was offered"
                }
                return true
            }
        }

        /// Runs the retries scheduled so far (each may schedule another).
        func runRetries() {
            let retries = self.state.withLock { state in
                defer { state.retries.removeAll() }
                return state.retries
            }
            for retry in retries { retry() }
        }
    }

    @Test func aFullBufferCoalescesInsteadOfLosing() {
        let seed = SeededGenerator.seedFromEnvironment()
        print("ChangeSetCoalescerTests: EDDY_SEED=\(seed)")
        var g = SeededGenerator(seed: seed)
        for round in 0..<100 {
            let consumer = Consumer()
            let coalescer = ChangeSetCoalescer(keyPaths: ChangeSetKeyPathGroup(), buffer: { consumer.take($0) }) { _, retry in
                consumer.state.withLock { $0.retries.append(retry) }
            }
            var observed: [(key: String, value: Value)] = []  // the observer's previous results
            let steps = 40
            for step in 0..<steps {
                var children: [String: Double] = [:]
                for k in 0..<g.int(in: 0...8) where g.chance(2, in: 3) { children["k\(k)"] = Double(g.int(in: 0...3)) }
                if step == steps - 1 { children["last"] = 9 }  // a change at the end of the burst
                let newest = self.results(children)
                let entries = newest.children.map { (key: $0.key, value: $0.data) }
                let change: DatabaseCollectionChange
                if step == 0 {
                    change = .initial(newest)
                } else {
                    let diff = ChangeSetDiff(from: observed, to: entries, keyPaths: nil)
                    if diff.isEmpty { continue }  // the observer reports nothing either
                    change = .update(newest, deletions: diff.deletions, insertions: diff.insertions, modifications: diff.modifications)
                }
                observed = entries
                // Half the rounds end with the buffer full: only the retries catch the consumer up.
                let room = round % 2 == 0 && step == steps - 1 ? false : g.chance(1, in: 2)
                consumer.state.withLock { $0.room = room }
                coalescer.offer(change)
                if g.chance(1, in: 4) { consumer.runRetries() }  // a retry's timer fires meanwhile
            }
            // The burst is over; the consumer reads again, and the retries find room.
            consumer.state.withLock { $0.room = true }
            for _ in 0..<3 { consumer.runRetries() }
            let (held, mismatch, pending) = consumer.state.withLock { ($0.held, $0.mismatch, $0.retries.count) }
            #expect(mismatch == nil, "seed \(seed) round \(round): \(mismatch ?? "")")
            #expect(held.map(\.key) == observed.map(\.key), "seed \(seed) round \(round): the consumer ends with the newest results")
            #expect(pending == 0, "seed \(seed) round \(round): no retry left once the consumer caught up")
        }
    }
}
