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

    /// Realm's key-path example, a dog's list of toys: "toys.brand" counts a toy's brand changing
    /// and a toy entering or leaving, not another field of a toy; a plain dotted path
    /// ("meta.views") stays a path; a parent path ("toys") counts any change below it.
    @Test func keyPathsFollowNestedCollectionsAsRealm() throws {
        func changed(_ old: String, _ new: String, _ keyPath: String) throws -> Bool {
            ChangeSetDiff.changed(try JSONParser.parse(old), try JSONParser.parse(new), [try Path(keyPath)])
        }
        let dog = #"{"name":"Rex","toys":{"t1":{"brand":"A","color":"red"}},"meta":{"views":1,"likes":1}}"#
        let brand = #"{"name":"Rex","toys":{"t1":{"brand":"B","color":"red"}},"meta":{"views":1,"likes":1}}"#
        let color = #"{"name":"Rex","toys":{"t1":{"brand":"A","color":"blue"}},"meta":{"views":1,"likes":1}}"#
        let added = #"{"name":"Rex","toys":{"t1":{"brand":"A","color":"red"},"t2":{"color":"red"}},"meta":{"views":1,"likes":1}}"#
        let likes = #"{"name":"Rex","toys":{"t1":{"brand":"A","color":"red"}},"meta":{"views":1,"likes":2}}"#
        let views = #"{"name":"Rex","toys":{"t1":{"brand":"A","color":"red"}},"meta":{"views":2,"likes":1}}"#
        #expect(try changed(dog, brand, "toys/brand"))
        #expect(try changed(dog, added, "toys/brand"))
        #expect(try !changed(dog, color, "toys/brand"))
        #expect(try !changed(dog, likes, "toys/brand"))
        #expect(try changed(dog, color, "toys"))
        #expect(try changed(dog, views, "meta/views"))
        #expect(try !changed(dog, likes, "meta/views"))
        // The first key is a field of the child, never a collection of it.
        #expect(try !changed(#"{"a":{"brand":1}}"#, #"{"a":{"brand":2}}"#, "brand"))
    }

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
