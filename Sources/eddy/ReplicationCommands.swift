// `eddy` commands about replication: `digest` (offline: compare a replica with its leader),
// `followers` (a running daemon's replication status) and `tail` (the change log of a running
// leader or follower as JSON lines).

import ArgumentParser
import EddyEngine
import EddyModel
import EddyProtocol
import Foundation

struct Digest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print CRC32C digests and counts of the tree, the index entries and the log as one JSON line.",
        discussion: "Equal digests on a leader and a follower (both stopped) mean identical tree, indexes and log. Index entries are digested under their declaration, not their catalog number.")
    @OptionGroup var options: DataOptions

    func run() async throws {
        let digest = try await self.options.withEngine(mustExist: true) { engine throws(EddyError) in try engine.digest() }
        printLine(JSONWriter.string(digest))
    }
}

struct Followers: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a running daemon's replication status as JSON: a leader's followers (applied id, lag) or a follower's leader and lag.")
    @Option(name: .long, help: "Data directory of the daemon (to find its socket). Default: ./data") var data = "./data"
    @Option(name: .long, help: "Native protocol socket. Default: <data>/eddyd.sock") var socket: String?
    @Option(name: .long, help: "Namespace. Default: default") var ns = "default"

    func run() throws {
        let socketPath = self.socket ?? self.data + "/eddyd.sock"
        do {
            let client = try NativeClient(path: socketPath)
            try client.send(Frame(kind: .status, requestID: 1, payload: JSONWriter.bytes(.object(["ns": .string(self.ns)]))))
            guard let frame = try client.receive() else { throw ProtocolError("the daemon closed the connection") }
            let payload = try JSONParser.parse(frame.payload)
            guard frame.kind == .value else { throw ProtocolError(JSONWriter.string(payload["message"])) }
            printLine(JSONWriter.string(payload["value"]))
        } catch let error as ProtocolError {
            FileHandle.standardError.write(Data("eddy: \(error.message)\n".utf8))
            throw ExitCode(1)
        } catch let error as EddyError {
            FileHandle.standardError.write(Data("eddy: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }
}
