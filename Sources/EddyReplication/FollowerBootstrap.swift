// Before a follower starts serving: if the leader says it needs a snapshot (a new replica after
// the leader's log was pruned, or one older than the log keeps), the replica directory is
// replaced by a consistent snapshot streamed from the leader (`snapshot`, `snapshotChunk`s,
// `snapshotEnd`; each chunk verified by its checksum before any of it is written).
//
// Crash safety: a marker file `<data>/<ns>.bootstrapping` exists from before the old replica
// is removed until the new one is complete and synced; a start that finds it removes the
// half-written replica and bootstraps again. A leader that cannot be reached leaves the replica
// as it is (the follower runtime keeps trying; see FollowerService).

import EddyEngine
import EddyModel
import EddyProtocol
import Foundation
import Logging

public enum FollowerBootstrap {
    public static func prepare(dataDirectory: String, leader: String, name: String, logger: Logger) throws(EddyError) {
        do {
            try self.run(dataDirectory: dataDirectory, leader: leader, name: name, logger: logger)
        } catch let error as EddyError {
            throw error
        } catch let error as ProtocolError {
            throw EddyError(.unavailable, "bootstrapping from the leader failed: \(error.message); the next start tries again")
        } catch {
            throw EddyError(.internal, "bootstrapping from the leader failed: \(error)")
        }
    }

    private static func run(dataDirectory: String, leader: String, name: String, logger: Logger) throws {
        let namespace = DataDirectory.defaultNamespace
        let directory = dataDirectory + "/" + namespace
        let marker = dataDirectory + "/" + namespace + ".bootstrapping"
        let files = FileManager.default
        if files.fileExists(atPath: marker) {
            logger.warning("an interrupted snapshot bootstrap is redone", metadata: ["eddy.directory": "\(directory)"])
            try? files.removeItem(atPath: directory)
            try? files.removeItem(atPath: marker)
        }
        var lastApplied: LogID? = nil
        var replicaOf: String? = nil
        if files.fileExists(atPath: directory + "/CURRENT") {
            var options = EngineOptions(durability: .sync)
            options.leader = leader
            options.runIndexBuilds = false
            let engine = try Engine.open(directory: directory, options: options, logger: logger)
            lastApplied = try engine.lastLogID()
            replicaOf = try engine.replicaOf()
            engine.close()
        }
        let client: NativeClient
        do {
            client = try NativeClient(address: leader)
        } catch {
            logger.warning("cannot reach the leader to check whether a snapshot is needed", metadata: ["eddy.error": "\(error.message)"])
            return
        }
        do {
            defer { client.shutdown() }
            let hello: Value = .object([
                "protocol": .number(1), "ns": .string(namespace), "follower": .string(name),
                "databaseID": replicaOf.map { .string($0) } ?? .null, "lastApplied": lastApplied.map { .string($0.rawValue) } ?? .null,
                "snapshot": .bool(true),
            ])
            try client.send(Frame(kind: .hello, requestID: 0, payload: JSONWriter.bytes(hello)))
            guard let welcome = try client.receive() else { return }
            guard welcome.kind == .welcome else {
                let reason = (try? JSONParser.parse(welcome.payload)["message"]).map { JSONWriter.string($0) } ?? "\(welcome.kind)"
                throw EddyError(.unavailable, "the leader at \(leader) refused this follower: \(reason)")
            }
            guard let first = try client.receive(), first.kind == .snapshot else { return }
            let begin = try JSONParser.parse(first.payload)
            guard case .string(let databaseID) = begin["databaseID"] else {
                throw EddyError(.invalidArgument, "the leader's snapshot does not name its database")
            }
            logger.info(
                "bootstrapping from the leader's snapshot",
                metadata: ["eddy.leader": "\(leader)", "eddy.at": "\(JSONWriter.string(begin["at"]))", "eddy.last_applied": "\(lastApplied?.rawValue ?? "none")"])
            guard files.createFile(atPath: marker, contents: Data()) else {
                throw EddyError(.io, "cannot create \(marker) to mark the bootstrap")
            }
            try? files.removeItem(atPath: directory)
            var received = 0
            let started = ContinuousClock.now
            var lastReport = started
            let count = try Engine.restoreSnapshot(directory: directory, replicaOf: databaseID) { () throws(EddyError) -> [EngineSnapshotReader.Record]? in
                let frame: Frame?
                do throws(ProtocolError) {
                    frame = try client.receive()
                } catch {
                    throw EddyError(.unavailable, "the snapshot stream broke: \(error.message)")
                }
                guard let frame else { throw EddyError(.unavailable, "the leader closed the connection in the middle of the snapshot") }
                switch frame.kind {
                case .snapshotChunk:
                    let records: [EngineSnapshotReader.Record]
                    do throws(ProtocolError) {
                        records = try SnapshotChunk.decode(frame.payload)
                    } catch {
                        throw EddyError(.corruption, "snapshot chunk rejected: \(error.message)")
                    }
                    received += records.count
                    if ContinuousClock.now - lastReport >= .seconds(10) {
                        lastReport = .now
                        logger.info("snapshot bootstrap in progress", metadata: ["eddy.records": "\(received)"])
                    }
                    return records
                case .snapshotEnd:
                    let expected = (try? JSONParser.parse(frame.payload)["records"]).flatMap { value -> Int? in
                        if case .number(let n) = value { return Int(exactly: n) }  // 1e30 or 1.5: no count
                        return nil
                    }
                    guard expected == received else {
                        throw EddyError(.corruption, "the snapshot ended after \(received) records but the leader sent \(expected.map(String.init) ?? "?")")
                    }
                    return nil
                default:
                    throw EddyError(.corruption, "unexpected frame \(frame.kind) inside the snapshot")
                }
            }
            try? files.removeItem(atPath: marker)
            let seconds = Double((ContinuousClock.now - started).components.attoseconds) / 1e18 + Double((ContinuousClock.now - started).components.seconds)
            logger.info("bootstrapped from a snapshot", metadata: ["eddy.records": "\(count)", "eddy.seconds": "\(String(format: "%.2f", seconds))"])
        }
    }
}
