// One Realm-style observer (`observe(keyPaths:on:_:)`): turns the value events of a view into
// `.initial` / `.update` change sets. It keeps the children it last reported and diffs each new
// window against them (`ChangeSetDiff`); an update that changes nothing it reports (only
// unobserved fields changed) is not delivered. A write made `withoutNotifying` its token moves
// the copy forward without a notification. Runs on the database's callback queue (a serial
// queue), then hands each change set to the observer's own queue when one was chosen.
// As Realm computes `.initial` after the registering code's turn, the first value is reported
// one pass of the callback queue later, folding in the events queued meanwhile (a write made
// right after `observe`, on a location another observer had loaded already, is in `.initial`
// and raises no `.update`). Its key paths are its view's group's (`ChangeSetKeyPathGroup`): as
// Realm's, the filters of one collection's observers do not filter exclusively.

import Dispatch
import Foundation
import EddyModel
import Synchronization

final class ChangeSetObserver: Sendable {
    typealias Block = @Sendable (DatabaseCollectionChange) -> Void

    private let keyPaths: ChangeSetKeyPathGroup
    private let queue: DispatchQueue?
    private let block: Block
    /// Runs a body after what the callback queue holds now (the database's `deliver`).
    private let requeue: @Sendable (@escaping @Sendable () -> Void) -> Void

    private struct State {
        /// The children last reported (or to be reported by the pending `.initial`).
        var last: [ChangeSetDiff.Entry]?
        /// The results `.initial` will report, until it is delivered.
        var initialPending: DatabaseResults?
    }
    private let state = Mutex(State())
    private let live = Atomic<Bool>(true)

    init(
        keyPaths: ChangeSetKeyPathGroup, queue: DispatchQueue?, requeue: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        block: @escaping Block
    ) {
        self.keyPaths = keyPaths
        self.queue = queue
        self.requeue = requeue
        self.block = block
    }

    /// `observe(keyPaths:)`'s paths. As Realm: an empty list is no filter. A "." can only
    /// separate keys (Firebase keys may not hold one), so Realm's dotted "meta.views" means
    /// "meta/views".
    static func parseKeyPaths(_ keyPaths: [String]?) -> [Path]? {
        keyPaths.flatMap { $0.isEmpty ? nil : $0 }?.map {
            DatabaseReference.parsePath($0.replacingOccurrences(of: ".", with: "/"), method: "observe(keyPaths:)")
        }
    }

    func stop() { self.live.store(false, ordering: .relaxed) }

    /// A value event of the view (`silently`: caused by a write made without notifying this
    /// observer).
    func received(_ snapshot: DataSnapshot, silently: Bool) {
        let results = DatabaseResults(snapshot)
        let entries = results.children.map { (key: $0.key, value: $0.data) }
        enum Step {
            case scheduleInitial
            case folded
            case diff([ChangeSetDiff.Entry])
        }
        let step = self.state.withLock { state -> Step in
            defer { state.last = entries }
            guard let previous = state.last else {
                state.initialPending = results
                return .scheduleInitial
            }
            if state.initialPending != nil {
                state.initialPending = results
                return .folded
            }
            return .diff(previous)
        }
        switch step {
        case .scheduleInitial:
            self.requeue {
                guard let initial = self.state.withLock({ state in
                    defer { state.initialPending = nil }
                    return state.initialPending
                }) else { return }
                self.emit(.initial(initial))
            }
        case .folded:
            return
        case .diff(let previous):
            guard !silently else { return }
            let diff = ChangeSetDiff(from: previous, to: entries, keyPaths: self.keyPaths.effective)
            guard !diff.isEmpty else { return }
            self.emit(.update(results, deletions: diff.deletions, insertions: diff.insertions, modifications: diff.modifications))
        }
    }

    func failed(_ error: any Error) {
        self.emit(.error(error))
    }

    private func emit(_ change: DatabaseCollectionChange) {
        guard let queue = self.queue else {
            if self.live.load(ordering: .relaxed) { self.block(change) }
            return
        }
        queue.async {
            if self.live.load(ordering: .relaxed) { self.block(change) }
        }
    }
}
