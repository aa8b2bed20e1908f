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
        let digest = try await self.options.withEngine(mustExist: true, offlineCommand: "digest") { engine throws(EddyError) in try engine.digest() }
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
            client.setReceiveTimeout(seconds: DaemonConnection.answerTimeoutSeconds)
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

struct Tail: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the change log of a running leader or follower as JSON lines, then follow it live.",
        discussion: #"""
            One line per changed location: {"id", "path", "op", "before", "after"} (op: set, update, push or
            remove; after null: removed). Resume with --since <id of the last line you processed>. With --path,
            only changes at, below or above that path (a change above it is narrowed to it).
            Exit status: 2 when the daemon cut the stream off as too far behind (the message names the id to
            resume after), 1 on other errors.
            """#)
    @Option(name: .long, help: "Data directory of the daemon (to find its socket). Default: ./data") var data = "./data"
    @Option(name: .long, help: "Native protocol socket. Default: <data>/eddyd.sock") var socket: String?
    @Option(name: .long, help: "Namespace. Default: default") var ns = "default"
    @Option(name: .long, help: "Only entries after this log id (ids start with '-': write --since=<id>). Default: from the oldest entry kept") var since: String?
    @Option(name: .long, help: "Only changes at, below or above this path") var path: String?
    @Option(name: .customLong("max-lines"), help: "Exit after this many lines (default: run until interrupted)") var maxLines: Int?

    func run() throws {
        var request: [String: Value] = ["ns": .string(self.ns)]
        if let since { request["since"] = .string(since) }
        if let path { request["path"] = .string(path) }
        let socketPath = self.socket ?? self.data + "/eddyd.sock"
        var lines = 0
        var lastID: String? = self.since
        do {
            let client = try NativeClient(path: socketPath)
            // Until the stream starts; then it may be quiet for hours.
            client.setReceiveTimeout(seconds: DaemonConnection.answerTimeoutSeconds)
            try client.send(Frame(kind: .tail, requestID: 1, payload: JSONWriter.bytes(.object(request))))
            while let frame = try client.receive() {
                let payload = (try? JSONParser.parse(frame.payload)) ?? .null
                switch frame.kind {
                case .tailing:
                    client.setReceiveTimeout(seconds: nil)
                    continue
                case .changes:
                    guard case .object(let list) = payload["changes"] else { continue }
                    for index in 0..<list.count {
                        let record = list[String(index)] ?? .null
                        printLine(JSONWriter.string(record))
                        if case .string(let id) = record["id"] { lastID = id }
                        lines += 1
                        if let maxLines, lines >= maxLines { return }
                    }
                    if case .string(let last) = payload["last"] { lastID = last }
                case .error:
                    if case .string(let message) = payload["message"] { throw ProtocolError(message) }
                    throw ProtocolError("the daemon answered an error")
                case .behind:
                    FileHandle.standardError.write(
                        Data("eddy: fell too far behind; the daemon disconnected; resume with --since \(lastID ?? "(none: start over)")\n".utf8))
                    throw ExitCode(2)
                default:
                    continue
                }
            }
            FileHandle.standardError.write(Data("eddy: the daemon closed the connection; resume with --since \(lastID ?? "(none)")\n".utf8))
            throw ExitCode(2)
        } catch let error as ProtocolError {
            FileHandle.standardError.write(Data("eddy: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }
}
