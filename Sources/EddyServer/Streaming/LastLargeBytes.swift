// The last large bytes made for a key, kept for the next caller with an equal key: listeners
// attaching together to one large location are each sent the same encoded value, and encoding
// it once instead of once per listener keeps the threads every request shares free. One entry,
// replaced by the next large one; bytes under `bytesMin` are made again each time (cheap).
// Thread-safety: a mutex around the entry; `make` runs outside it.

import Synchronization

final class LastLargeBytes<Key: Equatable & Sendable>: Sendable {
    let bytesMin: Int
    private let last = Mutex<(key: Key, bytes: [UInt8])?>(nil)

    init(bytesMin: Int = 64 * 1024) {
        self.bytesMin = bytesMin
    }

    /// The bytes for `key`: the entry's when its key is equal, else `make()`'s (kept when large).
    func bytes(for key: Key, make: () -> [UInt8]) -> [UInt8] {
        if let hit = self.last.withLock({ last in last.flatMap { $0.key == key ? $0.bytes : nil } }) { return hit }
        let bytes = make()
        if bytes.count >= self.bytesMin { self.last.withLock { $0 = (key, bytes) } }
        return bytes
    }
}
