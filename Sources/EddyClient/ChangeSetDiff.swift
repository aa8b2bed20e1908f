// The indices Realm reports between two results (see `DatabaseCollectionChange`): children
// that left are deletions, children that entered are insertions, children that stayed but
// changed their place among the others are a deletion and an insertion (the ones outside the
// longest run that kept its relative order; of several such runs, the one with the most
// unchanged children, as Realm's core chooses), and children that stayed in place with changed
// data are modifications. With key paths, only changes of those fields count; a key path is
// followed through nested collections as Realm follows one through a to-many link (`seen`).

import EddyModel

struct ChangeSetDiff: Equatable {
    var deletions: [Int] = []
    var insertions: [Int] = []
    var modifications: [Int] = []

    var isEmpty: Bool { self.deletions.isEmpty && self.insertions.isEmpty && self.modifications.isEmpty }

    typealias Entry = (key: String, value: Value)

    init(deletions: [Int], insertions: [Int], modifications: [Int]) {
        self.deletions = deletions
        self.insertions = insertions
        self.modifications = modifications
    }

    init(from old: [Entry], to new: [Entry], keyPaths: [Path]?) {
        var newIndex: [String: Int] = [:]
        for (i, entry) in new.enumerated() { newIndex[entry.key] = i }
        var oldIndex: [String: Int] = [:]
        for (i, entry) in old.enumerated() { oldIndex[entry.key] = i }
        // Children in both, in the old order, with their new positions: the longest
        // increasing run of new positions stayed in place; the others moved.
        let stayed = old.enumerated().compactMap { i, entry in newIndex[entry.key].map { (old: i, new: $0) } }
        // Of the longest runs, the one that keeps the most unchanged children in place (as
        // Realm's core does): fewer rows reported, and untouched rows never "move".
        let inPlace = Self.longestIncreasing(
            stayed.map(\.new), preferring: stayed.map { !Self.changed(old[$0.old].value, new[$0.new].value, keyPaths) })
        var moved = Set<Int>()  // old indices
        for (n, pair) in stayed.enumerated() where !inPlace.contains(n) { moved.insert(pair.old) }
        for (i, entry) in old.enumerated() where newIndex[entry.key] == nil || moved.contains(i) {
            self.deletions.append(i)
        }
        for (i, entry) in new.enumerated() {
            guard let j = oldIndex[entry.key] else {
                self.insertions.append(i)
                continue
            }
            if moved.contains(j) { self.insertions.append(i) }
        }
        for (n, pair) in stayed.enumerated() where inPlace.contains(n) {
            if Self.changed(old[pair.old].value, new[pair.new].value, keyPaths) { self.modifications.append(pair.old) }
        }
    }

    /// Whether a child counts as modified: any change, or a change of one of the key paths
    /// (a child that is not an object counts on any change).
    static func changed(_ old: Value, _ new: Value, _ keyPaths: [Path]?) -> Bool {
        guard old != new else { return false }
        guard let keyPaths, case .object = old, case .object = new else { return true }
        return keyPaths.contains { Self.seen(through: $0.keys[...], of: old) != Self.seen(through: $0.keys[...], of: new) }
    }

    /// Collections a key path is followed through, at most (Realm notifies nothing deeper than
    /// four levels).
    static let keyPathCollectionsMax = 4

    /// What a key path sees of a child. Its first key is a field of the child. Past it, where a
    /// value holds the next key, the path goes on into that field; where it does not, the value
    /// is taken as a collection of objects (Realm's "toys.brand" on a dog's list of toys) and
    /// the path is followed into each of its children that is an object, keyed by child, so
    /// a child entering or leaving the collection counts too, as Realm's does.
    static func seen(through keys: ArraySlice<String>, of value: Value, collections: Int = 0, first: Bool = true) -> Value {
        guard let key = keys.first else { return value }
        guard case .object(let children) = value else { return .null }
        if let child = children[key] { return Self.seen(through: keys.dropFirst(), of: child, collections: collections, first: false) }
        guard !first, collections < Self.keyPathCollectionsMax else { return .null }
        var each: [String: Value] = [:]
        for (name, child) in children {
            guard case .object = child else { continue }
            each[name] = Self.seen(through: keys, of: child, collections: collections + 1, first: false)
        }
        return .object(each)
    }

    /// Positions (in `values`, distinct integers in 0..<values.count or any range) of a longest
    /// strictly increasing subsequence; among the longest, one with the most `preferred`
    /// elements. O(n log n): a Fenwick tree over the values' ranks keeps, for each prefix of
    /// ranks, the best (length, preferred count) of a run ending there.
    static func longestIncreasing(_ values: [Int], preferring preferred: [Bool]? = nil) -> Set<Int> {
        let n = values.count
        guard n > 0 else { return [] }
        let ranks: [Int] = {
            let order = values.indices.sorted { values[$0] < values[$1] }
            var ranks = [Int](repeating: 0, count: n)
            for (rank, position) in order.enumerated() { ranks[position] = rank }
            return ranks
        }()
        // Score of a run: its length first, then how many preferred elements it holds.
        func weight(_ i: Int) -> Int { (n + 1) + ((preferred?[i] ?? false) ? 1 : 0) }
        var tree = [(score: Int, position: Int)](repeating: (0, -1), count: n + 1)
        var previous = [Int](repeating: -1, count: n)
        var best = (score: 0, position: -1)
        for i in 0..<n {
            var found = (score: 0, position: -1)
            var r = ranks[i]  // best over ranks < ranks[i]
            while r > 0 {
                if tree[r].score > found.score { found = tree[r] }
                r -= r & -r
            }
            let score = found.score + weight(i)
            previous[i] = found.position
            if score > best.score { best = (score, i) }
            r = ranks[i] + 1
            while r <= n {
                if score > tree[r].score { tree[r] = (score, i) }
                r += r & -r
            }
        }
        var result = Set<Int>()
        var current = best.position
        while current >= 0 {
            result.insert(current)
            current = previous[current]
        }
        return result
    }
}
