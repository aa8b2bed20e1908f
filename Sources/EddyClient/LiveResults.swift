// Live results for SwiftUI-style code (the Observation framework): an `@Observable` object on
// the main actor whose `results` follow a location or query. As Realm's live `Results`, the
// children it holds are always the newest the client has, and `keyPaths` only limit when views
// are told: a change of another field updates `results` without a redraw, so the next one (for
// any reason) shows it. It observes every change on the main queue until `invalidate()` or
// until it is released.

import Dispatch
import EddyModel
import Foundation
import Observation

@MainActor
@Observable
public final class LiveResults {
    /// The children in the query's order (empty until the first data arrives): always the
    /// newest, whatever `keyPaths` said.
    public var results: [DataSnapshot] {
        _ = self.version  // views are told when `version` moves
        return self.current
    }
    /// True once the first results arrived.
    public private(set) var isLoaded = false
    /// The error that ended the observation, if the server refused the query.
    public private(set) var error: (any Error)?

    /// Bumped by every change that counts under `keyPaths`.
    private var version = 0
    @ObservationIgnored private var current: [DataSnapshot] = []
    @ObservationIgnored private let keyPaths: [Path]?
    @ObservationIgnored private var token: NotificationToken?

    /// Follows `query`; `keyPaths` as in `observe(keyPaths:on:_:)`.
    public init(_ query: DatabaseQuery, keyPaths: [String]? = nil) {
        self.keyPaths = ChangeSetObserver.parseKeyPaths(keyPaths)
        // Every change refreshes `results`; only `keyPaths` join the query's filter, so other
        // tokens on the query hear no more than their own paths and these.
        self.token = query.observeChanges(keyPaths: keyPaths, queue: .main, hearsEveryChange: true) { [weak self] change in
            MainActor.assumeIsolated { self?.apply(change) }
        }
    }

    private func apply(_ change: DatabaseCollectionChange) {
        switch change {
        case .initial(let results):
            self.current = results.children
            self.isLoaded = true
            self.version += 1
        case .update(let results, _, _, _):
            let counts =
                self.keyPaths == nil
                || !ChangeSetDiff(
                    from: self.current.map { (key: $0.key, value: $0.data) }, to: results.children.map { (key: $0.key, value: $0.data) },
                    keyPaths: self.keyPaths
                ).isEmpty
            self.current = results.children
            if counts { self.version += 1 }
        case .error(let error):
            self.error = error
        }
    }

    /// Stops following the query.
    public func invalidate() {
        self.token?.invalidate()
        self.token = nil
    }
}

extension DatabaseQuery {
    /// Live results of this query for SwiftUI-style code (see `LiveResults`).
    @MainActor
    public func liveResults(keyPaths: [String]? = nil) -> LiveResults {
        LiveResults(self, keyPaths: keyPaths)
    }
}
