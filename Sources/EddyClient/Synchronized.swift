// A small value behind a lock, for flags shared between a callback and a task.

import Synchronization

final class Synchronized<T: Sendable>: Sendable {
    private let storage: Mutex<T>
    init(_ value: T) { self.storage = Mutex(value) }
    var value: T {
        get { self.storage.withLock { $0 } }
        set { self.storage.withLock { $0 = newValue } }
    }
}
