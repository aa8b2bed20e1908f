// The key-path filters of the Realm-style observers of one query object, combined as Realm
// combines the filters of the tokens on one collection: "Multiple notification tokens on the
// same object which filter for separate key paths do not filter exclusively. If one key path
// change is satisfied for one notification token, then all notification token blocks for that
// object will execute" (Realm Swift, "Key Path Change Listeners"; realm-core's notifier takes
// the union of its callbacks' key paths, and a callback without a filter unfilters them all).
// One group per `DatabaseQuery` object (as one per Realm `Results`, whose notifier is its own):
// two query objects of the same location, made separately, filter independently though they
// share a view and a subscription.
//
// Invariant: `effective` is nil (every field counts) when any member has no filter or there is
// no member, otherwise the union of the members' paths. Members join when they observe and
// leave when their token is invalidated; `Database` drops a group once it is empty.

import EddyModel
import Synchronization

final class ChangeSetKeyPathGroup: Sendable {
    /// Which group: the query's view and the query object (alive while a member's token is:
    /// the token's invalidation holds the query).
    struct Key: Hashable {
        var view: String
        var query: ObjectIdentifier
    }

    /// Each member's filter (nil: every field), by its token.
    private let members = Mutex<[ObjectIdentifier: [Path]?]>([:])

    /// The filter every member's change sets are computed with.
    var effective: [Path]? {
        self.members.withLock { members in
            guard !members.isEmpty else { return nil }
            var union: [Path] = []
            for filter in members.values {
                guard let filter else { return nil }
                for path in filter where !union.contains(path) { union.append(path) }
            }
            return union
        }
    }

    func join(_ member: ObjectIdentifier, keyPaths: [Path]?) {
        self.members.withLock { $0[member] = .some(keyPaths) }
    }

    /// Removes `member`; answers whether the group is empty now.
    func leave(_ member: ObjectIdentifier) -> Bool {
        self.members.withLock { members in
            members.removeValue(forKey: member)
            return members.isEmpty
        }
    }
}
