// The last large bytes made for a key, kept for the next caller with an equal key: listeners
// attaching together to one large location are each sent the same encoded value, and encoding
// it once instead of once per listener keeps the threads every request shares free. One entry,
// replaced by the next large one; bytes under `bytesMin` are made again each time (cheap).
// An entry is dropped `keptFor` after it was made, so a large value does not stay in memory
// once its listeners have attached (it did, until another large value replaced it).
// Thread-safety: a mutex around the entry; `make` runs outside it.

import Dispatch
import Synchronization

final class LastLargeBytes<Key: Equatable & Sendable>: Sendable {
    let bytesMin: Int
    let keptFor: Duration
    /// The entry and the number of entries made before it (so an expiry drops only its own).
    private let last = Mutex<(entry: (key: Key, bytes: [UInt8])?, made: UInt64)>((nil, 0))

    init(bytesMin: Int = 64 * 1024, keptFor: Duration = .seconds(5)) {
        self.bytesMin = bytesMin
        self.keptFor = keptFor
    }

    /// The bytes for `key`: the entry's when its key is equal, else `make()`'s (kept when large).
    func bytes(for key: Key, make: () -> [UInt8]) -> [UInt8] {
        if let hit = self.last.withLock({ last in last.entry.flatMap { $0.key == key ? $0.bytes : nil } }) { return hit }
        let bytes = make()
        guard bytes.count >= self.bytesMin else { return bytes }
        let made = self.last.withLock { last -> UInt64 in
            last.made += 1
            last.entry = (key, bytes)
            return last.made
        }
        let (seconds, attoseconds) = self.keptFor.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) {
            self.last.withLock { last in
                if last.made == made { last.entry = nil }
            }
        }
        return bytes
    }

    /// Whether an entry is kept now (for tests).
    var holdsEntry: Bool { self.last.withLock { $0.entry != nil } }
}
