// Firebase's onDisconnect on the native protocol: writes a client registers now for the server
// to make when its connection ends (the client goes offline, is killed, or its network drops;
// also when eddyd stops it). Used for presence (`onDisconnectSetValue("offline")` under
// `.info/connected`).
//
// Invariants:
// - A registered write is validated at once (keys, sizes, server values; a push is refused) and
//   held by the connection only: nothing is logged until the connection ends.
// - When it ends, the writes are replayed in the order registered into Firebase's model (a
//   `SparseWriteTree`) and made as one write, with the identity the connection had when it
//   registered them; the rules are checked then, on the data as it is then. If that one write is
//   refused, its parts are made one at a time and a refused one is logged (see
//   `OnDisconnectRuns`).
// - Bounded per connection (`OnDisconnectList`): 1,000 writes and 16 MiB.
// - `cancelDisconnect` forgets a path: the writes at or below it, and the part of a write above it
//   that lies there (an update's child there, or that part of a set), as Firebase's does.
// - When eddyd stops, the native listener closes every connection and waits for their writes
//   (`OnDisconnectRuns`, shared with HTTP presence connections) before the databases close. A
//   crash runs none of them (they live in the connection's memory); a client that reconnects
//   registers them again, as Firebase's presence code does in its `.info/connected` callback.

import EddyEngine
import EddyModel
import EddyProtocol
import Synchronization

extension NativeConnection {
    func registerOnDisconnect(_ requestID: UInt64, _ body: Value, engine: Engine, access: Access) async throws(EddyError) {
        let namespace = try Self.string(body, "ns", optional: true) ?? DataDirectory.defaultNamespace
        let operation = try Self.operation(body, request: "onDisconnect", allowsPush: false)
        let write = try OnDisconnectList.write(operation, namespace: namespace, access: access)
        // Firebase checks an onDisconnect write's rules when it is registered and reports a
        // denial then (its completion gets permission_denied); it is checked again when it runs.
        if !access.isAdmin { try await engine.onReaderPublic { () throws(EddyError) in try engine.checkWrite(operation, access) } }
        try self.state.withLock { (state: inout State) throws(EddyError) in try state.onDisconnect.append(write, budget: self.onDisconnectRuns.budget) }
        self.answer(.value, requestID, .object(["value": .null]))
    }

    func cancelOnDisconnect(_ requestID: UInt64, _ body: Value) throws(EddyError) {
        let namespace = try Self.string(body, "ns", optional: true) ?? DataDirectory.defaultNamespace
        let path = try Self.path(body)
        let cancelled = try self.state.withLock { (state: inout State) throws(EddyError) in
            try state.onDisconnect.cancel(namespace: namespace, at: path, budget: self.onDisconnectRuns.budget)
        }
        self.answer(.value, requestID, .object(["value": .object(["cancelled": .number(Double(cancelled))])]))
    }
}
