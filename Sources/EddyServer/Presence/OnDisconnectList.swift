// The writes one client connection registered with Firebase's onDisconnect, for the server to
// make when that connection ends. Held by a native connection (`NativeConnection`) or by an
// HTTP presence connection (`OnDisconnectSessions`); run by `OnDisconnectRuns`.
//
// Invariants:
// - Every write in the list was validated when it was registered (keys, sizes, server values;
//   a push is refused), so running it can fail only on the rules or the data as they are then.
// - Order is registration order; `cancel` removes the writes at or below a location (an update
//   counts by its location) and keeps the order of the rest.
// - Bounded: at most `countMax` writes and `bytesMax` bytes (their JSON size, approximately);
//   `append` beyond either is refused with `limitExceeded` and the list is unchanged. Every
//   list's bytes are also held in one daemon-wide budget (`OnDisconnectRuns.budget`): a write it
//   cannot take is refused with `busy`, so many connections cannot together exhaust memory.
//   `cancel` and `takeAll` give the bytes back.

import EddyEngine
import EddyModel

/// One write to make when the connection ends.
struct OnDisconnectWrite: Sendable {
    let namespace: String
    let operation: WriteOperation
    /// The identity the connection had when it registered the write: the rules are checked
    /// for it when the write runs.
    let access: Access
    let approximateBytes: Int
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
        return OnDisconnectWrite(namespace: namespace, operation: validated, access: access, approximateBytes: bytes)
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

    /// Drops the writes of `namespace` at or below `location`; returns how many.
    mutating func cancel(namespace: String, at location: Path, budget: MemoryBudget) -> Int {
        let before = self.writes.count
        var dropped = 0
        self.writes.removeAll { write in
            guard write.namespace == namespace, location.isAncestorOrSelf(of: write.operation.location) else { return false }
            dropped += write.approximateBytes
            return true
        }
        self.bytes -= dropped
        budget.release(dropped)
        return before - self.writes.count
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
