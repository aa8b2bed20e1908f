// A hold on one open namespace of a `DataDirectory`. While a namespace has a lease, it is not
// closed to make room for another (`Limits.namespacesOpenMax`); with none, it may be closed at
// any time once that many are open, after which its `Engine` must not be called.
//
// Invariant: `release()` takes effect once, whether called or reached by deinit. Holders
// release explicitly (`defer`) so the hold lasts as long as they use the engine; the deinit is
// the safety net for a holder dropped without releasing (a response body never written).

import EddyModel
import Synchronization

public final class EngineLease: Sendable {
    public let namespace: String
    public let engine: Engine
    private let directory: DataDirectory
    private let released = Atomic<Bool>(false)

    init(namespace: String, engine: Engine, directory: DataDirectory) {
        self.namespace = namespace
        self.engine = engine
        self.directory = directory
    }

    deinit {
        self.release()
    }

    /// Ends the hold; idempotent. The engine must not be used after the last lease of its
    /// namespace is released (unless it is the default namespace, which stays open).
    public func release() {
        guard !self.released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        self.directory.releaseLease(self.namespace)
    }
}
