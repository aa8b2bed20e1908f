// Whether an engine takes writes, and if not why: what `GET /.status.json` reports.
//
// States, from the storage's point of view (a follower is read-only for clients whatever
// its state; the replication status says so separately):
// - `writable`: writes are accepted.
// - `diskFull`: the data volume is below the reserve (`--disk-reserve-bytes`); writes are
//   refused with 507 and resume by themselves once space is freed.
// - `readOnly`: the engine was opened read-only because the volume was full at start; a
//   restart after freeing space makes it writable.
// - `failed`: a storage failure stopped writes; a restart is needed (the log says why).
// Reads, queries and event streams work in every state.

import EddyModel

public struct EngineHealth: Sendable, Equatable {
    public enum State: String, Sendable {
        case writable, diskFull, readOnly, failed
    }

    public var state: State
    /// Why writes are refused; nil while writable.
    public var reason: String?
    /// Free bytes on the data volume (nil when the file system cannot say).
    public var diskAvailableBytes: UInt64?
    public var diskReserveBytes: UInt64

    /// As JSON for `/.status.json`.
    public var json: [String: Value] {
        [
            "state": .string(self.state.rawValue),
            "writable": .bool(self.state == .writable),
            "reason": self.reason.map { .string($0) } ?? .null,
            "diskAvailableBytes": self.diskAvailableBytes.map { .number(Double($0)) } ?? .null,
            "diskReserveBytes": .number(Double(self.diskReserveBytes)),
        ]
    }
}

extension Engine {
    /// The engine's state now (a statvfs call; cheap).
    public var health: EngineHealth {
        let reserve = DiskSpaceReserve(path: self.directory, reserveBytes: self.options.diskReserveBytes)
        let available = DiskSpaceReserve.availableBytes(at: self.directory)
        if let failure = self.failure {
            return EngineHealth(
                state: self.openedReadOnly ? .readOnly : .failed, reason: failure.message,
                diskAvailableBytes: available, diskReserveBytes: self.options.diskReserveBytes)
        }
        if let refusal = reserve.refusal(groupBytes: 0) {
            return EngineHealth(
                state: .diskFull, reason: refusal.message, diskAvailableBytes: available,
                diskReserveBytes: self.options.diskReserveBytes)
        }
        return EngineHealth(
            state: .writable, reason: nil, diskAvailableBytes: available, diskReserveBytes: self.options.diskReserveBytes)
    }
}
