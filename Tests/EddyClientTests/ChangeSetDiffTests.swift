// The indices of Realm-style change sets (`ChangeSetDiff`): Realm's own example of a swap, and a
// seeded model test (the seed is printed; rerun with EDDY_SEED) that the indices turn the old
// results into the new ones as a batch update, that children left in place are a longest run,
// and that among the longest runs the one with the most unchanged children is kept.

@testable import EddyClient
import EddyModel
import EddyTesting
import Testing

@Suite struct ChangeSetDiffTests {
    typealias Entry = ChangeSetDiff.Entry

    func entries(_ pairs: [(String, Double)]) -> [Entry] { pairs.map { (key: $0.0, value: Value.number($0.1)) } }

    // realm-core keeps unchanged rows in place: [e, d, c] -> [c, d, e] with e and c rescored
    // moves e and c, not d.
    @Test func anUnchangedChildStaysInPlace() {
        let diff = ChangeSetDiff(from: self.entries([("e", 5), ("d", 4), ("c", 3)]), to: self.entries([("c", 1), ("d", 4), ("e", 9)]), keyPaths: nil)
        #expect(diff == ChangeSetDiff(deletions: [0, 2], insertions: [0, 2], modifications: []))
    }

    @Test func indicesTurnTheOldResultsIntoTheNewOnes() {
        let seed = SeededGenerator.seedFromEnvironment()
        print("ChangeSetDiffTests: EDDY_SEED=\(seed)")
        var g = SeededGenerator(seed: seed)
        for round in 0..<300 {
            let keys = (0..<g.int(in: 0...12)).map { "k\($0)" }
            let old: [Entry] = keys.filter { _ in g.chance(3, in: 4) }.shuffled(using: &g).map { (key: $0, value: .number(Double(g.int(in: 0...2)))) }
            let new: [Entry] = keys.filter { _ in g.chance(3, in: 4) }.shuffled(using: &g).map { (key: $0, value: .number(Double(g.int(in: 0...2)))) }
            let diff = ChangeSetDiff(from: old, to: new, keyPaths: nil)
            let context = "seed \(seed) round \(round): \(old.map(\.key)) -> \(new.map(\.key))"
            // As a batch update: delete (old indices, descending), then insert (new indices, ascending).
            var keysAfter = old.map(\.key)
            for i in diff.deletions.sorted(by: >) { keysAfter.remove(at: i) }
            for i in diff.insertions.sorted() { keysAfter.insert(new[i].key, at: i) }
            #expect(keysAfter == new.map(\.key), "\(context)")
            let newIndex = Dictionary(uniqueKeysWithValues: new.enumerated().map { ($1.key, $0) })
            let inPlace = old.indices.filter { !diff.deletions.contains($0) }
            #expect(diff.modifications == inPlace.filter { old[$0].value != new[newIndex[old[$0].key]!].value }, "\(context)")
            // A longest run, and among the longest the most unchanged children (O(n^2) reference).
            let stayed = old.indices.filter { newIndex[old[$0].key] != nil }
            var best = [(length: Int, unchanged: Int)](repeating: (0, 0), count: stayed.count)
            for (a, i) in stayed.enumerated() {
                let unchanged = old[i].value == new[newIndex[old[i].key]!].value ? 1 : 0
                best[a] = (1, unchanged)
                for b in 0..<a where newIndex[old[stayed[b]].key]! < newIndex[old[i].key]! {
                    let candidate = (length: best[b].length + 1, unchanged: best[b].unchanged + unchanged)
                    if candidate.length > best[a].length || (candidate.length == best[a].length && candidate.unchanged > best[a].unchanged) {
                        best[a] = candidate
                    }
                }
            }
            let optimum = best.max { ($0.length, $0.unchanged) < ($1.length, $1.unchanged) } ?? (0, 0)
            let kept = inPlace.count
            let keptUnchanged = inPlace.filter { old[$0].value == new[newIndex[old[$0].key]!].value }.count
            #expect(kept == optimum.length && keptUnchanged == optimum.unchanged, "\(context)")
        }
    }
}
