// Before a follower starts serving: if the leader says it needs a snapshot (a new replica after
// the leader's log was pruned, or one older than the log keeps), the replica directory is
// replaced by a consistent snapshot streamed from the leader (`snapshot`, `snapshotChunk`s,
// `snapshotEnd`; each chunk verified by its checksum before any of it is written).
//
// The snapshot is written into `<data>/<ns>.incoming`; the replica in `<data>/<ns>` is left as
// it is until the new one is complete and synced. Then `<ns>.incoming/BOOTSTRAP-COMPLETE` is
// written and synced, the old replica removed and the new one renamed into its place (the data
// directory synced after). Crash safety, at the next start: an incoming directory without the
// complete file is an interrupted transfer and is removed (the old replica is intact); one with
// it is an interrupted swap and is finished. (`<ns>.bootstrapping`, the marker of earlier
// versions, which removed the old replica first, still makes a start redo the bootstrap.)
//
// A transfer that fails (the stream breaks, a chunk fails its checksum, the counts disagree:
// a broken or hostile leader) is logged and retried with backoff (`retryDelayFirst`, doubling
// to `retryDelayMax`); the replica stays as it was. A leader that cannot be reached leaves the
// replica as it is (the follower runtime keeps trying; see FollowerService); one that refuses
// the follower stops the start with its reason.

import EddyEngine
import EddyModel
import EddyProtocol
import Foundation
import Logging
import Synchronization

public enum FollowerBootstrap {
    static let retryDelayFirst: Duration = .milliseconds(100)
    static let retryDelayMax: Duration = .seconds(5)
    static let completeFile = "BOOTSTRAP-COMPLETE"

    /// A snapshot transfer that failed after it began; the replica is unchanged.
    struct TransferFailure: Error {
        var error: EddyError
    }

    public static func prepare(
        dataDirectory: String, leader: String, name: String, namespace: String = DataDirectory.defaultNamespace, secret: String? = nil,
        caFile: String? = nil, discardsAnotherHistory: Bool = false, logger: Logger
    ) throws(EddyError) {
        var delay = Self.retryDelayFirst
        while true {
            do {
                try self.run(
                    dataDirectory: dataDirectory, leader: leader, name: name, namespace: namespace, secret: secret, caFile: caFile,
                    samplesLog: discardsAnotherHistory, logger: logger)
                return
            } catch let refusal as AnotherHistory where discardsAnotherHistory {
                // A cluster's deposed leader: what it holds beyond the new leader's history was
                // never confirmed to a client as replicated. Kept aside for the operator: only
                // the entries after the common point when the leader named one (then the
                // replica resumes from there), otherwise the whole database (then the replica
                // starts again from a snapshot).
                if let common = refusal.commonPoint,
                    try self.discard(
                        after: common, dataDirectory: dataDirectory, namespace: namespace, leader: leader, refusal: refusal, logger: logger)
                {
                    continue
                }
                try self.setAside(dataDirectory: dataDirectory, namespace: namespace, refusal: refusal, logger: logger)
            } catch let refusal as AnotherHistory {
                throw refusal.error
            } catch let failure as TransferFailure {
                logger.error(
                    "the snapshot from the leader failed; the replica is unchanged; retrying",
                    metadata: ["eddy.error": "\(failure.error.message)", "eddy.retry_in": "\(delay)"])
                Thread.sleep(forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
                delay = min(delay * 2, Self.retryDelayMax)
            } catch let error as EddyError {
                throw error
            } catch let error as ProtocolError {
                throw EddyError(.unavailable, "bootstrapping from the leader failed: \(error.message); the next start tries again")
            } catch {
                throw EddyError(.internal, "bootstrapping from the leader failed: \(error)")
            }
        }
    }

    /// Finishes or discards what an interrupted bootstrap left (see the top of this file).
    static func recover(directory: String, incoming: String, logger: Logger) throws {
        let files = FileManager.default
        let legacyMarker = directory + ".bootstrapping"
        if files.fileExists(atPath: legacyMarker) {
            logger.warning("an interrupted snapshot bootstrap is redone", metadata: ["eddy.directory": "\(directory)"])
            try? files.removeItem(atPath: directory)
            try files.removeItem(atPath: legacyMarker)
        }
        if files.fileExists(atPath: incoming + "/" + Self.completeFile) {
            logger.warning("finishing an interrupted switch to a snapshot", metadata: ["eddy.directory": "\(directory)"])
            try self.swap(incoming, into: directory)
        } else if files.fileExists(atPath: incoming) {
            logger.warning("discarding an interrupted snapshot transfer; the replica is unchanged", metadata: ["eddy.directory": "\(incoming)"])
            try files.removeItem(atPath: incoming)
        }
        try? files.removeItem(atPath: directory + "/" + Self.completeFile)
    }

    /// Replaces `directory` by the complete snapshot in `incoming`, durably.
    static func swap(_ incoming: String, into directory: String) throws {
        let files = FileManager.default
        if files.fileExists(atPath: directory) { try files.removeItem(atPath: directory) }
        try files.moveItem(atPath: incoming, toPath: directory)
        Self.syncDirectory((directory as NSString).deletingLastPathComponent)
        try files.removeItem(atPath: directory + "/" + Self.completeFile)
    }

    /// fsync of a directory, so a rename in it survives a power loss.
    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    /// The leader refused this replica: its last applied entry is not in the leader's log.
    struct AnotherHistory: Error {
        var error: EddyError
        var lastApplied: LogID?
        /// The newest entry both logs have, when the leader found one in the hello's sample.
        var commonPoint: LogID?
    }

    /// Most entries a deposed leader discards in place; with more, its database is set aside.
    static let discardCountMax = 100_000

    /// Undoes the replica's entries after `common` (`Engine.discardEntries`), first writing them
    /// to `<data>/discarded/<namespace>-<UTC time>.jsonl` (one `eddy log` line each, synced) and
    /// logging their range. False (nothing changed) when there are too many to discard in place.
    static func discard(
        after common: LogID, dataDirectory: String, namespace: String, leader: String, refusal: AnotherHistory, logger: Logger
    ) throws(EddyError) -> Bool {
        var options = EngineOptions(durability: .sync)
        options.leader = leader
        options.runIndexBuilds = false
        let engine = try Engine.open(directory: dataDirectory + "/" + namespace, options: options, logger: logger)
        defer { engine.close() }
        let sideFile = try Self.discardedPath(dataDirectory: dataDirectory, namespace: namespace) + ".jsonl"
        let discarded: [LogEntry]
        do {
            // The side file is written from the very entries undone, before they are.
            discarded = try Blocking.wait { () async throws(EddyError) -> [LogEntry] in
                try await engine.discardEntries(after: common, countMax: Self.discardCountMax) { entries throws(EddyError) in
                    try Self.writeSynced(entries, to: sideFile)
                }
            }
        } catch where error.code == .limitExceeded {
            return false
        }
        guard let first = discarded.first, let last = discarded.last else { return false }
        logger.error(
            "this replica held entries the new leader's history does not (a deposed leader's unconfirmed writes): discarded, kept for the operator; resuming after the common entry",
            metadata: [
                "eddy.namespace": "\(namespace)", "eddy.common_entry": "\(common.rawValue)", "eddy.discarded_first": "\(first.id.rawValue)",
                "eddy.discarded_last": "\(last.id.rawValue)", "eddy.discarded_count": "\(discarded.count)", "eddy.kept_at": "\(sideFile)",
            ])
        return true
    }

    /// `<data>/discarded/<namespace>-<UTC time>` (the directory created): where what a replica
    /// gives up is kept for the operator.
    static func discardedPath(dataDirectory: String, namespace: String) throws(EddyError) -> String {
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
        do {
            try FileManager.default.createDirectory(atPath: dataDirectory + "/discarded", withIntermediateDirectories: true)
        } catch {
            throw EddyError(.io, "creating \(dataDirectory)/discarded: \(error.localizedDescription)")
        }
        return dataDirectory + "/discarded/" + namespace + "-" + stamp
    }

    /// Writes `entries` as `eddy log` lines to a new file at `path` and syncs it and its directory.
    static func writeSynced(_ entries: [LogEntry], to path: String) throws(EddyError) {
        var lines: [UInt8] = []
        for entry in entries {
            lines += JSONWriter.bytes(entry.json)
            lines.append(0x0A)
        }
        guard FileManager.default.createFile(atPath: path, contents: Data(lines)) else {
            throw EddyError(.io, "cannot create \(path) to keep \(entries.count) discarded log entries")
        }
        let fd = open(path, O_RDONLY)
        if fd >= 0 {
            _ = fsync(fd)
            close(fd)
        }
        Self.syncDirectory((path as NSString).deletingLastPathComponent)
    }

    /// Moves a namespace's replica that diverged from the leader to
    /// `<data>/discarded/<namespace>-<UTC time>`, logging what it held, so the next bootstrap
    /// starts from an empty directory (a snapshot of the leader).
    static func setAside(dataDirectory: String, namespace: String, refusal: AnotherHistory, logger: Logger) throws(EddyError) {
        let aside = try Self.discardedPath(dataDirectory: dataDirectory, namespace: namespace)
        do {
            try FileManager.default.moveItem(atPath: dataDirectory + "/" + namespace, toPath: aside)
        } catch {
            throw EddyError(.io, "setting aside namespace \(namespace)'s diverged replica at \(aside): \(error.localizedDescription)")
        }
        logger.error(
            "this replica holds entries the leader's history does not (a deposed leader's unconfirmed writes): set aside, bootstrapping from the leader",
            metadata: [
                "eddy.namespace": "\(namespace)", "eddy.last_applied": "\(refusal.lastApplied?.rawValue ?? "none")", "eddy.kept_at": "\(aside)",
                "eddy.refusal": "\(refusal.error.message)",
            ])
    }

    private static func run(
        dataDirectory: String, leader: String, name: String, namespace: String, secret: String?, caFile: String?, samplesLog: Bool,
        logger: Logger
    ) throws {
        let directory = dataDirectory + "/" + namespace
        let incoming = directory + ".incoming"
        let files = FileManager.default
        try self.recover(directory: directory, incoming: incoming, logger: logger)
        var lastApplied: LogID? = nil
        var replicaOf: String? = nil
        var recent: [LogID] = []
        if files.fileExists(atPath: directory + "/CURRENT") {
            var options = EngineOptions(durability: .sync)
            options.leader = leader
            options.runIndexBuilds = false
            let engine = try Engine.open(directory: directory, options: options, logger: logger)
            lastApplied = try engine.lastLogID()
            replicaOf = try engine.replicaOf()
            if samplesLog { recent = try engine.sampleLogIDs() }
            engine.close()
        }
        let client: any FrameChannel
        do {
            client = try connectToLeader(leader, caFile: caFile)
        } catch {
            logger.warning("cannot reach the leader to check whether a snapshot is needed", metadata: ["eddy.error": "\(error.message)"])
            return
        }
        do {
            defer { client.shutdown() }
            var hello: Value = .object([
                "protocol": .number(Double(Frame.replicationProtocolVersion)), "ns": .string(namespace), "follower": .string(name),
                "databaseID": replicaOf.map { .string($0) } ?? .null, "lastApplied": lastApplied.map { .string($0.rawValue) } ?? .null,
                "snapshot": .bool(true),
            ])
            if let secret { hello.set(.string(secret), at: Path(validatedKeys: ["secret"])) }
            if !recent.isEmpty { hello.set(.string(recent.map(\.rawValue).joined(separator: ",")), at: Path(validatedKeys: ["recent"])) }
            try client.send(Frame(kind: .hello, requestID: 0, payload: JSONWriter.bytes(hello)))
            guard let welcome = try client.receive() else { return }
            guard welcome.kind == .welcome else {
                let refusal = (try? JSONParser.parse(welcome.payload)) ?? .null
                let reason = refusal["message"] == .null ? "\(welcome.kind)" : JSONWriter.string(refusal["message"])
                let error = EddyError(.unavailable, "the leader at \(leader) refused this follower: \(reason)")
                if refusal["reason"] == .string("anotherHistory") {
                    var common: LogID? = nil
                    if case .string(let text) = refusal["commonPoint"] { common = LogID(text) }
                    throw AnotherHistory(error: error, lastApplied: lastApplied, commonPoint: common)
                }
                throw error
            }
            guard let first = try client.receive(), first.kind == .snapshot else { return }
            let begin = try JSONParser.parse(first.payload)
            guard case .string(let databaseID) = begin["databaseID"] else {
                throw EddyError(.invalidArgument, "the leader's snapshot does not name its database")
            }
            logger.info(
                "bootstrapping from the leader's snapshot",
                metadata: ["eddy.leader": "\(leader)", "eddy.at": "\(JSONWriter.string(begin["at"]))", "eddy.last_applied": "\(lastApplied?.rawValue ?? "none")"])
            var received = 0
            let started = ContinuousClock.now
            var lastReport = started
            let count: Int
            do throws(EddyError) {
                let restore = try SnapshotRestore(directory: incoming)
                receiving: while true {
                    let frame: Frame?
                    do throws(ProtocolError) {
                        frame = try client.receive()
                    } catch {
                        throw EddyError(.unavailable, "the snapshot stream broke: \(error.message)")
                    }
                    guard let frame else { throw EddyError(.unavailable, "the leader closed the connection in the middle of the snapshot") }
                    switch frame.kind {
                    case .snapshotChunk:
                        // Verified by its checksum before any record is handed over.
                        received += try SnapshotChunk.decode(frame.payload) { family, key, value throws(EddyError) in
                            try restore.put(family: family, key: key, value: value)
                        }
                        if ContinuousClock.now - lastReport >= .seconds(10) {
                            lastReport = .now
                            logger.info("snapshot bootstrap in progress", metadata: ["eddy.records": "\(received)"])
                        }
                    case .snapshotEnd:
                        let expected = (try? JSONParser.parse(frame.payload)["records"]).flatMap { value -> Int? in
                            if case .number(let n) = value { return Int(exactly: n) }  // 1e30 or 1.5: no count
                            return nil
                        }
                        guard expected == received else {
                            throw EddyError(.corruption, "the snapshot ended after \(received) records but the leader sent \(expected.map(String.init) ?? "?")")
                        }
                        break receiving
                    default:
                        throw EddyError(.corruption, "unexpected frame \(frame.kind) inside the snapshot")
                    }
                }
                count = try restore.finish(replicaOf: databaseID)
            } catch {
                // A partial snapshot is never used; the replica in `directory` is untouched.
                try? files.removeItem(atPath: incoming)
                throw TransferFailure(error: error)
            }
            // Complete and synced (`finish` ingested, flushed and synced it): mark it, then swap.
            guard files.createFile(atPath: incoming + "/" + Self.completeFile, contents: Data()) else {
                throw EddyError(.io, "cannot create \(incoming)/\(Self.completeFile) to mark the snapshot complete")
            }
            Self.syncDirectory(incoming)
            try self.swap(incoming, into: directory)
            let seconds = Double((ContinuousClock.now - started).components.attoseconds) / 1e18 + Double((ContinuousClock.now - started).components.seconds)
            logger.info("bootstrapped from a snapshot", metadata: ["eddy.records": "\(count)", "eddy.seconds": "\(String(format: "%.2f", seconds))"])
        }
    }
}
