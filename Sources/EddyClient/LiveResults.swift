// Live results for SwiftUI-style code (the Observation framework): an `@Observable` object on
// the main actor whose `results` follow a location or query. Views that read `results` are
// redrawn when they change. It holds a change-set observer (`observe(keyPaths:on:_:)`) on the
// main queue until `invalidate()` or until it is released.

import Dispatch
import Foundation
import Observation

@MainActor
@Observable
public final class LiveResults {
    /// The children in the query's order (empty until the first data arrives).
    public private(set) var results: [DataSnapshot] = []
    /// True once the first results arrived.
    public private(set) var isLoaded = false
    /// The error that ended the observation, if the server refused the query.
    public private(set) var error: (any Error)?

    @ObservationIgnored private var token: NotificationToken?

    /// Follows `query`; `keyPaths` as in `observe(keyPaths:on:_:)`.
    public init(_ query: DatabaseQuery, keyPaths: [String]? = nil) {
        self.token = query.observe(keyPaths: keyPaths, on: .main) { [weak self] change in
            MainActor.assumeIsolated { self?.apply(change) }
        }
    }

    private func apply(_ change: DatabaseCollectionChange) {
        switch change {
        case .initial(let results), .update(let results, _, _, _):
            self.results = results.children
            self.isLoaded = true
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
