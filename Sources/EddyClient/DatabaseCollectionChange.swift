// Realm-style change notifications for a location's or query's children: what
// `observe(keyPaths:on:_:)` delivers. `.initial` carries the results once they are first
// known; each `.update` carries the results after a change and the indices that take the
// previous results to them, as Realm (and UITableView's batch updates) define them:
// - `deletions`: indices in the previous results of children that left (or moved);
// - `insertions`: indices in the new results of children that entered (or moved);
// - `modifications`: indices in the previous results of children still in place whose data
//   changed (only the fields named by `keyPaths`, when given).
// A child whose position changed is reported as a deletion and an insertion, as Realm does.
// All three arrays are sorted ascending.

import Foundation

public enum DatabaseCollectionChange: Sendable {
    case initial(DatabaseResults)
    case update(DatabaseResults, deletions: [Int], insertions: [Int], modifications: [Int])
    case error(any Error)
}

/// The children of a location or a query's window, in the query's order, at one moment.
public struct DatabaseResults: RandomAccessCollection, Sendable {
    /// The whole window as one snapshot (what a `value` event carries).
    public let snapshot: DataSnapshot
    /// The child snapshots in order.
    public let children: [DataSnapshot]

    init(_ snapshot: DataSnapshot) {
        self.snapshot = snapshot
        self.children = snapshot.childSnapshots
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { self.children.count }
    public subscript(position: Int) -> DataSnapshot { self.children[position] }

    /// The keys of the children, in order.
    public var keys: [String] { self.children.map(\.key) }

    /// The position of the child with `key`, if it is in the results.
    public func index(ofKey key: String) -> Int? { self.children.firstIndex { $0.key == key } }

    /// Realm's frozen results: these already are an immutable snapshot, so they are always
    /// frozen, `freeze()` answers them as they are, and they are never invalidated. (The live
    /// counterpart is `LiveResults`, or the next change set.)
    public var isFrozen: Bool { true }
    public func freeze() -> DatabaseResults { self }
    public var isInvalidated: Bool { false }
}
