// The first `put` an event stream sends (the whole value at its location), kept for the next
// stream that would send the same bytes: streams attaching to one location and query, in one
// form, current after the same log entry, hold the same value. Encoding it sorts every child's
// key: 50 streams opened on a 100,000-child location encoded it 50 times on the threads every
// request shares, which stalled other namespaces' requests for seconds. One entry, replaced by
// the next stream's; only values of at least `bytesMin` are kept.

import EddyEngine
import EddyModel

final class InitialPutCache: Sendable {
    /// What determines a first put's bytes. `liveAfter`: the entry the value is current after.
    struct Key: Equatable, Sendable {
        let namespace: String
        let location: Path
        let query: Query?
        let export: Bool
        let liveAfter: LogID
    }

    /// Smaller first puts are encoded again each time (cheap), so the entry holds a large one.
    static let bytesMin = 64 * 1024

    private let last = LastLargeBytes<Key>(bytesMin: InitialPutCache.bytesMin)

    /// The frame for `key` (nil: not shareable), made by `make` unless the last one matches.
    func frame(for key: Key?, make: () -> [UInt8]) -> [UInt8] {
        guard let key else { return make() }
        return self.last.bytes(for: key, make: make)
    }
}
