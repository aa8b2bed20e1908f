// What `observe(keyPaths:on:_:)` returns, as Realm's `NotificationToken`: notifications are
// delivered while the token lives and until `invalidate()`; releasing the token invalidates it.
// No notification runs after `invalidate()` returns on the callback queue.

import Foundation
import Synchronization

public final class NotificationToken: Sendable {
    /// What `invalidate()` runs, in the order added; nil once invalidated.
    private let stops = Mutex<[@Sendable () -> Void]?>([])

    init() {}

    /// Adds a step to what `invalidate()` runs (at once when already invalidated).
    func onInvalidate(_ body: @escaping @Sendable () -> Void) {
        let added = self.stops.withLock { stops -> Bool in
            guard stops != nil else { return false }
            stops!.append(body)
            return true
        }
        if !added { body() }
    }

    /// Stops the notifications (and the server subscription when it was the last observer).
    /// As Realm's: true when the token was valid, false when it was invalidated already.
    @discardableResult
    public func invalidate() -> Bool {
        let stops = self.stops.withLock { stops -> [@Sendable () -> Void]? in
            defer { stops = nil }
            return stops
        }
        guard let stops else { return false }
        for stop in stops { stop() }
        return true
    }

    deinit {
        self.invalidate()
    }
}
