// The writes one client connection registered with Firebase's onDisconnect, for the server to
// make when that connection ends. Held by a native connection (`NativeConnection`) or by an
// HTTP presence connection (`OnDisconnectSessions`); run by `OnDisconnectRuns`, which replays
// them into a `SparseWriteTree` (Firebase's model) and makes the result as one write.
//
// Invariants:
// - Every write in the list was validated when it was registered (keys, sizes, server values;
//   a push is refused), so running it can fail only on the rules or the data as they are then.
// - Order is registration order; `cancel` removes the writes at or below a location (an update
//   counts by its location) and keeps the order of the rest. When a write above the location
//   exists, it removes nothing and keeps a cancel step instead: replayed, it forgets the
//   location in the tree as it then stands (an update's child there, or that part of a set), as
//   Firebase's `cancel` does.
// - Bounded: at most `countMax` entries (writes and cancel steps) and `bytesMax` bytes (their
//   JSON size, approximately); `append` or a `cancel` beyond either is refused with
//   `limitExceeded` and the list is unchanged. Every list's bytes are also held in one
//   daemon-wide budget (`OnDisconnectRuns.budget`): a write it cannot take is refused with
//   `busy`, so many connections cannot together exhaust memory. `cancel` and `takeAll` give the
//   bytes back.

import EddyEngine
import EddyModel

/// One write to make when the connection ends, or a cancel to replay among them.
struct OnDisconnectWrite: Sendable {
    enum Step: Sendable {
        case write(WriteOperation)
        /// Forgets the location inside the earlier writes above it.
        case cancel(Path)
    }

    let namespace: String
    let step: Step
    /// The identity the connection had when it registered the write: the rules are checked
    /// for it when the write runs.
    let access: Access
    let approximateBytes: Int

    var location: Path {
        switch self.step {
        case .write(let operation): return operation.location
        case .cancel(let location): return location
        }
    }
}

struct OnDisconnectList: Sendable {
    static let countMax = 1000
    static let bytesMax = 16 << 20

    private(set) var writes: [OnDisconnectWrite] = []
    private(set) var bytes = 0

    /// Validates a write as an ordinary one would be and makes it ready to register.
    static func write(_ operation: WriteOperation, namespace: String, access: Access) throws(EddyError) -> OnDisconnectWrite {
        var bytes = 0
        let validated = try Engine.validated(operation, approximateBytes: &bytes)
        return OnDisconnectWrite(namespace: namespace, step: .write(validated), access: access, approximateBytes: bytes)
    }

    mutating func append(_ write: OnDisconnectWrite, budget: MemoryBudget) throws(EddyError) {
        guard self.writes.count < Self.countMax else {
            throw EddyError(
                .limitExceeded, "this connection has \(Self.countMax) onDisconnect writes already (onDisconnectCountMax); cancel some first")
        }
        guard self.bytes + write.approximateBytes <= Self.bytesMax else {
            throw EddyError(
                .limitExceeded,
                "this connection's onDisconnect writes would hold more than \(Self.bytesMax) bytes (onDisconnectBytesMax)")
        }
        guard budget.reserve(write.approximateBytes) else {
            throw EddyError(
                .busy,
                "the onDisconnect writes of all connections hold \(budget.usedBytes) of \(budget.bytesMax) bytes (onDisconnectBytesTotal); retry later")
        }
        self.writes.append(write)
        self.bytes += write.approximateBytes
    }

    /// Cancels the writes of `namespace` at or below `location`; returns how many. With no
    /// write above `location` they are dropped (what the replay would make of them). With one,
    /// the list keeps them and a cancel step instead, which the replay applies where it stands:
    /// writes below may have changed the value above (a leaf made an object, an object emptied),
    /// and Firebase's forget splits that value as it then is.
    mutating func cancel(namespace: String, at location: Path, budget: MemoryBudget) throws(EddyError) -> Int {
        let inside: (OnDisconnectWrite) -> Bool = { $0.namespace == namespace && location.isAncestorOrSelf(of: $0.location) }
        let count = self.writes.filter { write in
            guard case .write = write.step else { return false }
            return inside(write)
        }.count
        let above = self.writes.contains { write in
            guard case .write = write.step, write.namespace == namespace else { return false }
            return write.location.isAncestorOrSelf(of: location) && write.location != location
        }
        guard above else {
            var dropped = 0
            self.writes.removeAll { write in
                guard inside(write) else { return false }
                dropped += write.approximateBytes
                return true
            }
            self.bytes -= dropped
            budget.release(dropped)
            return count
        }
        guard self.writes.count < Self.countMax else {
            throw EddyError(
                .limitExceeded,
                "this connection has \(Self.countMax) onDisconnect writes and cancels already (onDisconnectCountMax); cancel at \(location.abbreviated) or above instead")
        }
        let bytes = location.byteCount + 64
        guard budget.reserve(bytes) else {
            throw EddyError(
                .busy,
                "the onDisconnect writes of all connections hold \(budget.usedBytes) of \(budget.bytesMax) bytes (onDisconnectBytesTotal); retry later")
        }
        // (A cancel checks no rules: its access is never used.)
        self.writes.append(OnDisconnectWrite(namespace: namespace, step: .cancel(location), access: .unauthenticated, approximateBytes: bytes))
        self.bytes += bytes
        return count
    }

    /// Empties the list and returns what it held, in order.
    mutating func takeAll(budget: MemoryBudget) -> [OnDisconnectWrite] {
        defer {
            budget.release(self.bytes)
            self.writes = []
            self.bytes = 0
        }
        return self.writes
    }
}
