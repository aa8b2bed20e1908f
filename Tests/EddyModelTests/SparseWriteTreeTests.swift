// `SparseWriteTree`: Firebase's SparseSnapshotTree semantics for onDisconnect writes (a set
// replaces what is below it or changes a value above it; a forget splits a value above it into
// its children), checked against a model: applying the tree's writes to any data gives what
// applying the remembered sets in order, minus the forgotten paths, gives where Firebase's
// tree is exact.

import EddyTesting
import Testing

@testable import EddyModel

struct SparseWriteTreeTests {
    private func p(_ s: String) -> Path { try! Path(s) }

    private func described(_ tree: SparseWriteTree) -> [String] {
        tree.writes().map { "\($0.path)=\(JSONWriter.string($0.value))" }
    }

    @Test func aSetBelowARememberedValueChangesItInPlace() {
        var tree = SparseWriteTree()
        tree.remember(.object(["a": .number(1)]), at: p("/foo"))
        tree.remember(.number(2), at: p("/foo/b"))
        tree.remember(.null, at: p("/foo/a"))
        #expect(self.described(tree) == ["/foo={\"b\":2}"])
    }

    @Test func aSetAboveReplacesWhatIsBelowIt() {
        var tree = SparseWriteTree()
        tree.remember(.number(1), at: p("/foo/a"))
        tree.remember(.number(2), at: p("/foo/b/c"))
        #expect(self.described(tree) == ["/foo/a=1", "/foo/b/c=2"])
        tree.remember(.string("x"), at: p("/foo"))
        #expect(self.described(tree) == ["/foo=\"x\""])
    }

    /// Firebase's R7b: an update at foo {baz, bat}, then a cancel at foo/baz: only bat is left.
    @Test func aCancelBelowAnUpdateForgetsThatChildOnly() {
        var tree = SparseWriteTree()
        tree.remember(.string("c"), at: p("/foo/baz"))
        tree.remember(.string("d"), at: p("/foo/bat"))
        tree.forget(p("/foo/baz"))
        #expect(self.described(tree) == ["/foo/bat=\"d\""])
    }

    @Test func aCancelBelowASetSplitsItIntoItsChildren() {
        var tree = SparseWriteTree()
        tree.remember(.object(["a": .number(1), "b": .object(["c": .number(2), "d": .number(3)])]), at: p("/foo"))
        tree.forget(p("/foo/b/c"))
        #expect(self.described(tree) == ["/foo/a=1", "/foo/b/d=3"])
        tree.forget(p("/foo/a"))
        tree.forget(p("/foo/b/d"))
        #expect(tree.isEmpty && tree.writes().isEmpty)
    }

    @Test func aCancelBelowALeafKeepsItAndBelowARemoveDropsIt() {
        var tree = SparseWriteTree()
        tree.remember(.number(5), at: p("/leaf"))
        tree.remember(.null, at: p("/gone"))
        tree.forget(p("/leaf/x"))
        #expect(self.described(tree) == ["/gone=null", "/leaf=5"])
        tree.forget(p("/gone/x"))
        #expect(self.described(tree) == ["/leaf=5"])
    }

    @Test func aCancelAtOrAboveForgetsEverythingThere() {
        var tree = SparseWriteTree()
        tree.remember(.number(1), at: p("/a/b"))
        tree.remember(.number(2), at: p("/a/c"))
        tree.remember(.number(3), at: p("/z"))
        tree.forget(p("/a"))
        #expect(self.described(tree) == ["/z=3"])
        tree.forget(p("/"))
        #expect(tree.isEmpty)
    }

    /// Random sets (and removes) with no forgets: applying the tree's writes to random data
    /// gives what applying every set in order gives. Prints its seed (`EDDY_SEED` reruns it).
    @Test func withoutCancelsTheTreeMakesWhatTheSetsInOrderMake() {
        let seed = SeededGenerator.seedFromEnvironment()
        print("SparseWriteTreeTests seed \(seed) (rerun with EDDY_SEED=\(seed))")
        var rng = SeededGenerator(seed: seed)
        let keys = ["a", "b", "c"]
        func randomPath() -> Path {
            Path(validatedKeys: (0..<Int.random(in: 1...3, using: &rng)).map { _ in keys.randomElement(using: &rng)! })
        }
        func randomValue(depth: Int = 0) -> Value {
            switch Int.random(in: 0..<(depth < 2 ? 4 : 2), using: &rng) {
            case 0: return .null
            case 1: return .number(Double(Int.random(in: 0..<10, using: &rng)))
            default: return .object(Dictionary(uniqueKeysWithValues: keys.shuffled(using: &rng).prefix(2).map { ($0, randomValue(depth: depth + 1)) })).normalized()
            }
        }
        for round in 0..<500 {
            var tree = SparseWriteTree()
            // Objects down to the deepest path's parent: a write below a primitive replaces it,
            // and a later null there cannot bring the primitive back, in either order.
            func initial(depth: Int) -> Value {
                guard depth < 3 else { return .number(Double(Int.random(in: 0..<10, using: &rng))) }
                return .object(Dictionary(uniqueKeysWithValues: keys.filter { _ in rng.chance(2, in: 3) }.map { ($0, initial(depth: depth + 1)) })).normalized()
            }
            var expected = initial(depth: 0)
            var viaTree = expected
            var sets: [String] = []
            for _ in 0..<Int.random(in: 1...6, using: &rng) {
                let path = randomPath()
                let value = randomValue()
                tree.remember(value, at: path)
                expected.set(value, at: path)
                sets.append("\(path)=\(JSONWriter.string(value))")
            }
            for (path, value) in tree.writes() { viaTree.set(value, at: path) }
            #expect(viaTree == expected, "seed \(seed) round \(round): sets \(sets), tree \(self.described(tree))")
        }
    }
}
