// Firebase's onDisconnect on the native protocol: writes a client registers now for the server
// to make when its connection ends (the client goes offline, is killed, or its network drops;
// also when eddyd stops it). Used for presence (`onDisconnectSetValue("offline")` under
// `.info/connected`).
//
// Invariants:
// - A registered write is validated at once (keys, sizes, server values; a push is refused) and
//   held by the connection only: nothing is logged until the connection ends.
// - When it ends, the writes run in the order registered, each as an ordinary write with the
//   identity the connection had when it registered it; the rules are checked then, on the data
//   as it is then. A refused one is logged and the next runs.
// - Bounded per connection: `onDisconnectCountMax` writes and `onDisconnectBytesMax` bytes.
// - `cancelDisconnect` drops the writes at or below a path (an update counts by its location).
// - When eddyd stops, the native listener closes every connection and waits for their writes
//   (`OnDisconnectRuns`) before the databases close. A crash runs none of them (they live in
//   the connection's memory); a client that reconnects registers them again, as Firebase's
//   presence code does in its `.info/connected` callback.

import EddyEngine
import EddyModel
import EddyProtocol
import Foundation
import Logging
import Synchronization

/// One write to make when the connection ends.
struct OnDisconnectWrite: Sendable {
    let namespace: String
    let operation: WriteOperation
    let access: Access
    let approximateBytes: Int
}

extension NativeConnection {
    static let onDisconnectCountMax = 1000
    static let onDisconnectBytesMax = 16 << 20

    func registerOnDisconnect(_ requestID: UInt64, _ body: Value, access: Access) throws(EddyError) {
        let namespace = try Self.string(body, "ns", optional: true) ?? DataDirectory.defaultNamespace
        let operation = try Self.operation(body, request: "onDisconnect", allowsPush: false)
        var bytes = 0
        let validated = try Engine.validated(operation, approximateBytes: &bytes)
        let write = OnDisconnectWrite(namespace: namespace, operation: validated, access: access, approximateBytes: bytes)
        try self.state.withLock { (state: inout State) throws(EddyError) in
            guard state.onDisconnect.count < Self.onDisconnectCountMax else {
                throw EddyError(
                    .limitExceeded, "this connection has \(Self.onDisconnectCountMax) onDisconnect writes already (onDisconnectCountMax); cancel some first")
            }
            guard state.onDisconnectBytes + bytes <= Self.onDisconnectBytesMax else {
                throw EddyError(
                    .limitExceeded,
                    "this connection's onDisconnect writes would hold more than \(Self.onDisconnectBytesMax) bytes (onDisconnectBytesMax)")
            }
            state.onDisconnect.append(write)
            state.onDisconnectBytes += bytes
        }
        self.answer(.value, requestID, .object(["value": .null]))
    }

    func cancelOnDisconnect(_ requestID: UInt64, _ body: Value) throws(EddyError) {
        let namespace = try Self.string(body, "ns", optional: true) ?? DataDirectory.defaultNamespace
        let path = try Self.path(body)
        let cancelled = self.state.withLock { state -> Int in
            let before = state.onDisconnect.count
            state.onDisconnect.removeAll { write in
                guard write.namespace == namespace, path.isAncestorOrSelf(of: write.operation.location) else { return false }
                state.onDisconnectBytes -= write.approximateBytes
                return true
            }
            return before - state.onDisconnect.count
        }
        self.answer(.value, requestID, .object(["value": .object(["cancelled": .number(Double(cancelled))])]))
    }

    /// Makes the writes of a connection that ended, in order (see the top of the file).
    func runOnDisconnect(_ writes: [OnDisconnectWrite]) {
        guard !writes.isEmpty else { return }
        let data = self.data
        let logger = self.logger
        let runs = self.onDisconnectRuns
        runs.begin()
        Task {
            defer { runs.end() }
            for write in writes {
                do throws(EddyError) {
                    let engine = try data.engine(namespace: write.namespace, create: false)
                    _ = try await engine.write(write.operation, access: write.access)
                } catch {
                    logger.warning(
                        "an onDisconnect write was not made",
                        metadata: ["eddy.ns": "\(write.namespace)", "eddy.path": "\(write.operation.location)", "eddy.error": "\(error.message)"])
                }
            }
        }
    }
}

/// How many connections' onDisconnect writes are still running, so a stopping listener can wait
/// for them before the databases close.
final class OnDisconnectRuns: Sendable {
    private let running = Mutex(0)

    func begin() { self.running.withLock { $0 += 1 } }
    func end() { self.running.withLock { $0 -= 1 } }
    var isIdle: Bool { self.running.withLock { $0 == 0 } }
}
