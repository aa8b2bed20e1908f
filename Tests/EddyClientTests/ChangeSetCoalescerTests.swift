// Change sets handed to a full buffer are coalesced, never lost (`ChangeSetCoalescer`): a seeded
// model test (the seed is printed; rerun with EDDY_SEED) feeds random results through a buffer
// that refuses at random and checks that the consumer, applying each change set it receives as
// a batch update to its copy, always ends up with the newest results it was handed.

@testable import EddyClient
import EddyModel
import EddyTesting
import Testing

@Suite struct ChangeSetCoalescerTests {
    func results(_ children: [String: Double]) -> DatabaseResults {
        DatabaseResults(DataSnapshot(ref: DatabaseReference(), value: .object(children.mapValues { Value.number($0) }), order: .value))
    }

    @Test func aFullBufferCoalescesInsteadOfLosing() {
        let seed = SeededGenerator.seedFromEnvironment()
        print("ChangeSetCoalescerTests: EDDY_SEED=\(seed)")
        var g = SeededGenerator(seed: seed)
        for round in 0..<100 {
            let coalescer = ChangeSetCoalescer(keyPaths: ChangeSetKeyPathGroup())
            var consumer: [(key: String, value: Value)] = []  // what the consumer holds
            var observed: [(key: String, value: Value)] = []  // the observer's previous results
            let steps = 40
            for step in 0..<steps {
                var children: [String: Double] = [:]
                for k in 0..<g.int(in: 0...8) where g.chance(2, in: 3) { children["k\(k)"] = Double(g.int(in: 0...3)) }
                if step == steps - 1 { children["last"] = 9 }  // a change, and room for it: the consumer catches up
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
                let room = step == steps - 1 || g.chance(1, in: 2)
                coalescer.offer(change) { handed in
                    guard room else { return false }
                    switch handed {
                    case .initial(let results):
                        consumer = results.children.map { (key: $0.key, value: $0.data) }
                    case .update(let results, let deletions, let insertions, _):
                        var keys = consumer.map(\.key)
                        for i in deletions.sorted(by: >) { keys.remove(at: i) }
                        for i in insertions.sorted() { keys.insert(results.children[i].key, at: i) }
                        #expect(keys == results.children.map(\.key), "seed \(seed) round \(round) step \(step)")
                        consumer = results.children.map { (key: $0.key, value: $0.data) }
                    case .error:
                        Issue.record("no error was offered")
                    }
                    return true
                }
            }
            #expect(consumer.map(\.key) == observed.map(\.key), "seed \(seed) round \(round): the consumer ends with the newest results")
        }
    }
}
