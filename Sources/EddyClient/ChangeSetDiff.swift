// The indices Realm reports between two results (see `DatabaseCollectionChange`): children
// that left are deletions, children that entered are insertions, children that stayed but
// changed their place among the others are a deletion and an insertion (the ones outside the
// longest run that kept its relative order), and children that stayed in place with changed
// data are modifications. With key paths, only changes of those fields count.

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
        let inPlace = Self.longestIncreasing(stayed.map(\.new))
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
        return keyPaths.contains { old.child(at: $0) != new.child(at: $0) }
    }

    /// Positions (in `values`) of one longest strictly increasing subsequence (patience sort).
    static func longestIncreasing(_ values: [Int]) -> Set<Int> {
        var tails: [Int] = []  // positions in values
        var previous = [Int](repeating: -1, count: values.count)
        for (i, value) in values.enumerated() {
            var low = 0
            var high = tails.count
            while low < high {
                let mid = (low + high) / 2
                if values[tails[mid]] < value { low = mid + 1 } else { high = mid }
            }
            if low > 0 { previous[i] = tails[low - 1] }
            if low == tails.count { tails.append(i) } else { tails[low] = i }
        }
        var result = Set<Int>()
        var current = tails.last ?? -1
        while current >= 0 {
            result.insert(current)
            current = previous[current]
        }
        return result
    }
}
