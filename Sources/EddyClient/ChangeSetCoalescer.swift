// Hands Realm-style change sets to a bounded buffer (the actor form of `observe` and
// `changes()`) without ever dropping what a consumer needs: when the buffer is full, the change
// sets that do not fit are not lost but merged, and the next one that fits is a single
// `.update` from the results the consumer last received to the newest, as Realm coalesces
// notifications it cannot deliver at once. Invariant: the consumer's results plus the indices
// handed to it always equal the newest results handed to it.
// Called on the database's callback queue (serially); the lock only makes that explicit.

import EddyModel
import Synchronization

final class ChangeSetCoalescer: Sendable {
    private let keyPaths: ChangeSetKeyPathGroup
    /// The results of the last change set that went into the buffer (nil before the first), and
    /// whether later change sets were left out since.
    private let state = Mutex<(handed: DatabaseResults?, behind: Bool)>((nil, false))

    init(keyPaths: ChangeSetKeyPathGroup) {
        self.keyPaths = keyPaths
    }

    /// Offers `change` to `buffer`, which returns false when it is full (nothing taken).
    func offer(_ change: DatabaseCollectionChange, to buffer: (DatabaseCollectionChange) -> Bool) {
        self.state.withLock { state in
            let results: DatabaseResults
            var outgoing = change
            switch change {
            case .error:
                _ = buffer(change)
                return
            case .initial(let newest):
                results = newest
            case .update(let newest, _, _, _):
                results = newest
                if state.behind {
                    // What the consumer lacks, from its last results to the newest, as one change set.
                    guard let handed = state.handed else {
                        outgoing = .initial(newest)
                        break
                    }
                    let diff = ChangeSetDiff(
                        from: handed.children.map { (key: $0.key, value: $0.data) },
                        to: newest.children.map { (key: $0.key, value: $0.data) }, keyPaths: self.keyPaths.effective)
                    guard !diff.isEmpty else {
                        // Only unobserved fields changed meanwhile: nothing to tell.
                        state.behind = false
                        return
                    }
                    outgoing = .update(newest, deletions: diff.deletions, insertions: diff.insertions, modifications: diff.modifications)
                }
            }
            if buffer(outgoing) {
                state.handed = results
                state.behind = false
            } else {
                state.behind = true
            }
        }
    }
}
