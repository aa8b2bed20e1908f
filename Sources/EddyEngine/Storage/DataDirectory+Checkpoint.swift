// Checkpoints of every namespace of a running daemon, for `eddy backup`: written under
// `<data>/.checkpoints/<id>/<namespace>` (hard links: the same file system, no copy of the data),
// handed to the caller to copy, then deleted on release. `.checkpoints` is not a valid namespace
// name, so it never clashes with one; a daemon start removes checkpoints a crashed caller left.

import EddyModel
import Foundation

extension DataDirectory {
    static let checkpointsFolder = ".checkpoints"
    /// Checkpoints held at once, at most.
    public static let checkpointsMax = 8

    var checkpointsPath: String { self.path + "/" + Self.checkpointsFolder }

    /// Checkpoints every namespace on disk; returns the checkpoint's id, directory and, per
    /// namespace, what it holds.
    public func checkpointAll() throws(EddyError) -> (id: String, directory: String, namespaces: [String: CheckpointInfo]) {
        // Each checkpoint keeps every file it links on disk until released, however the data
        // moves on: a bound, so requests that never release cannot fill the volume.
        let held = ((try? FileManager.default.contentsOfDirectory(atPath: self.checkpointsPath)) ?? []).count
        guard held < Self.checkpointsMax else {
            throw EddyError(
                .busy,
                "\(held) checkpoints are held already (at most \(Self.checkpointsMax); each keeps its files on disk until released): let the backups that hold them finish, or release them")
        }
        let id = "\(UInt64(Date().timeIntervalSince1970 * 1000))-\(UInt32.random(in: 0...UInt32.max))"
        let directory = self.checkpointsPath + "/" + id
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw EddyError(.io, "cannot create \(directory): \(error.localizedDescription)")
        }
        var namespaces: [String: CheckpointInfo] = [:]
        do throws(EddyError) {
            for name in self.namespacesOnDisk() {
                let lease = try self.lease(namespace: name, create: false)
                defer { lease.release() }
                namespaces[name] = try lease.engine.checkpoint(to: directory + "/" + name)
            }
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        return (id, directory, namespaces)
    }

    /// Deletes checkpoint `id`; false when there is none.
    @discardableResult
    public func releaseCheckpoint(_ id: String) throws(EddyError) -> Bool {
        guard !id.isEmpty, !id.contains("/"), !id.hasPrefix(".") else {
            throw EddyError(.invalidArgument, "checkpoint id \"\(id)\" is not one this daemon made")
        }
        let directory = self.checkpointsPath + "/" + id
        guard FileManager.default.fileExists(atPath: directory) else { return false }
        do {
            try FileManager.default.removeItem(atPath: directory)
        } catch {
            throw EddyError(.io, "cannot delete \(directory): \(error.localizedDescription)")
        }
        return true
    }

    /// Removes every checkpoint (at start: no caller can still be copying one).
    public func removeStaleCheckpoints() {
        try? FileManager.default.removeItem(atPath: self.checkpointsPath)
    }
}
