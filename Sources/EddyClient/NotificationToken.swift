// What `observe(keyPaths:on:_:)` returns, as Realm's `NotificationToken`: notifications are
// delivered while the token lives and until `invalidate()`; releasing the token invalidates it.
// No notification runs after `invalidate()` returns on the callback queue.

import Foundation
import Synchronization

public final class NotificationToken: Sendable {
    private let stop = Mutex<(@Sendable () -> Void)?>(nil)

    init() {}

    func onInvalidate(_ body: @escaping @Sendable () -> Void) {
        self.stop.withLock { $0 = body }
    }

    /// Stops the notifications (and the server subscription when it was the last observer).
    public func invalidate() {
        let stop = self.stop.withLock { stop -> (@Sendable () -> Void)? in
            defer { stop = nil }
            return stop
        }
        stop?()
    }

    deinit {
        self.invalidate()
    }
}
