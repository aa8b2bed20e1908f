// The native protocol's `checkpoint` and `releaseCheckpoint` requests (`eddy backup` against a
// running daemon): the admin's once credentials are configured (the socket's file mode guards
// it otherwise, as it guards everything in emulator mode). The checkpoint is written off the
// event loop: it flushes memtables and links files. A connection's checkpoints not released
// when it ends are released then (`releaseCheckpoints`); at most `DataDirectory.checkpointsMax`
// are held at once.

import EddyEngine
import EddyModel
import EddyProtocol
import Foundation
import Logging
import Synchronization

extension NativeConnection {
    func checkpointRequest(_ frame: Frame, _ body: Value, access: Access) async throws(EddyError) {
        guard access.isAdmin || !self.authenticator.isConfigured else {
            throw EddyError(.permissionDenied, "Permission denied: backups are for the admin credential only (send it in an auth request first)")
        }
        switch frame.kind {
        case .checkpoint:
            let data = self.data
            let made = await Task.detached { () -> Result<(id: String, directory: String, namespaces: [String: CheckpointInfo]), EddyError> in
                do throws(EddyError) {
                    return .success(try data.checkpointAll())
                } catch {
                    return .failure(error)
                }
            }.value
            let checkpoint = try made.get()
            // Released when the connection ends, if the client has not (a backup that died).
            let open = self.state.withLock { state -> Bool in
                if !state.closed { state.checkpoints.insert(checkpoint.id) }
                return !state.closed
            }
            guard open else {
                _ = try? self.data.releaseCheckpoint(checkpoint.id)
                return
            }
            var namespaces: [String: Value] = [:]
            for (name, info) in checkpoint.namespaces {
                namespaces[name] = .object([
                    "directory": .string(info.directory), "databaseId": .string(info.databaseID),
                    "last": info.last.map { .string($0.rawValue) } ?? .null,
                ])
            }
            self.logger.info("checkpoint written for a backup", metadata: ["eddy.checkpoint": "\(checkpoint.directory)"])
            self.answer(
                .value, frame.requestID,
                .object([
                    "value": .object([
                        "id": .string(checkpoint.id), "directory": .string(checkpoint.directory), "namespaces": .object(namespaces),
                    ])
                ]))
        default:
            guard case .string(let id) = body["id"] else { throw EddyError(.invalidArgument, "releaseCheckpoint needs \"id\": the checkpoint's id") }
            let released = try self.data.releaseCheckpoint(id)
            _ = self.state.withLock { $0.checkpoints.remove(id) }
            self.answer(.value, frame.requestID, .object(["value": .object(["released": .bool(released)])]))
        }
    }

    /// Releases the checkpoints this connection made and did not release (it ended).
    func releaseCheckpoints() {
        let held = self.state.withLock { state -> Set<String> in
            defer { state.checkpoints.removeAll() }
            return state.checkpoints
        }
        guard !held.isEmpty else { return }
        let data = self.data
        // Deleting files: off the event loop that reports the close.
        Task.detached { for id in held { _ = try? data.releaseCheckpoint(id) } }
    }
}
