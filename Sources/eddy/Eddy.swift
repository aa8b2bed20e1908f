// eddy: the command-line tool. Data commands reach a running daemon (its socket, or HTTP with
// --url; `DaemonLink`) and otherwise open the data directory themselves (offline: the directory
// lock refuses that while a daemon holds it). Thin: every command is a request to the daemon or a
// call into EddyEngine.

import ArgumentParser
import EddyEngine
import EddyModel
import EddyProtocol
import Foundation
import Logging

@main
struct Eddy: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "eddy",
        abstract: "Read, write, inspect and verify an Eddy database: through a running eddyd (socket or --url) or offline.",
        subcommands: [Get.self, QueryCommand.self, RulesCommand.self, IndexCommand.self, Watch.self, Set.self, Update.self, Push.self, Remove.self, Log.self, Verify.self, Digest.self, Followers.self, Tail.self, TokenCommand.self, BackupCommand.self, RestoreCommand.self, ImportCommand.self, ExportCommand.self, StatsCommand.self, ClusterCommand.self]
    )
}

struct DataOptions: ParsableArguments {
    @Option(name: .long, help: "Data directory of the daemon. Default: ./data")
    var data = "./data"

    @Option(name: .long, help: "Namespace (database) inside the data directory. Default: default")
    var ns = DataDirectory.defaultNamespace

    @Option(name: .long, help: "A running daemon's native socket (get, query, set, update, push, remove use it when a daemon answers). Default: <data>/eddyd.sock")
    var socket: String?

    @Option(name: .customLong("admin-token-file"), help: "File holding the daemon's admin secret (when credentials are configured).")
    var adminTokenFile: String?

    @Option(name: .long, help: "A running daemon's HTTP address, e.g. http://127.0.0.1:9000 (instead of its socket; never offline).")
    var url: String?

    @Flag(name: .long, help: "Open the data directory directly, never a running daemon (the daemon must be stopped).")
    var offline = false

    /// The running daemon to send requests to: over HTTP with --url, else its socket when a
    /// daemon answers there; nil: none answers (or --offline), work offline.
    func daemon() throws -> (any DaemonLink)? {
        do throws(EddyError) {
            if let url = self.url {
                guard !self.offline else { throw EddyError(.invalidArgument, "--url and --offline contradict each other; give one") }
                return try DaemonHTTPConnection(url: url, adminTokenFile: self.adminTokenFile)
            }
            guard !self.offline else { return nil }
            let connection = try DaemonConnection.connect(socketPath: self.socket ?? self.data + "/eddyd.sock", adminTokenFile: self.adminTokenFile)
            if connection == nil, let socket = self.socket {
                // Named explicitly: working offline on --data instead would answer for another database.
                throw EddyError(
                    .unavailable, "no daemon answers on --socket \(socket) (no such socket, or nothing listens on it); start eddyd, or leave --socket out to work offline on --data")
            }
            return connection
        } catch {
            FileHandle.standardError.write(Data("eddy: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// Runs `body` against the daemon; prints EddyErrors as `eddy: message`, exit 1.
    func online<T>(_ daemon: any DaemonLink, _ body: (any DaemonLink) throws(EddyError) -> T) throws -> T {
        do {
            return try body(daemon)
        } catch {
            FileHandle.standardError.write(Data("eddy: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// Runs `body` with the namespace's engine; prints EddyErrors as `eddy: message`, exit 1.
    /// Online index builds do not advance unless `runIndexBuilds` (`eddy index build`), so
    /// inspecting a database leaves its build state alone.
    /// `offlineCommand`: the name of a command that only works on the data directory; it refuses
    /// `--url` and `--socket` (a running daemon's), which it would otherwise ignore and open
    /// `--data` (default ./data) instead.
    func withEngine<T>(
        mustExist: Bool, runIndexBuilds: Bool = false, offlineCommand: String? = nil, _ body: (Engine) async throws(EddyError) -> T
    ) async throws -> T {
        do {
            if let offlineCommand, self.url != nil || self.socket != nil {
                throw EddyError(
                    .invalidArgument,
                    "eddy \(offlineCommand) reads a stopped daemon's data directory (--data), not a running daemon's --url or --socket")
            }
            var options = EngineOptions(durability: .sync)
            options.runIndexBuilds = runIndexBuilds
            let directory = try DataDirectory(
                path: self.data, options: options,
                logger: Logger(label: "eddy", factory: { _ in SwiftLogNoOpLogHandler() }))
            defer { directory.close() }
            try DataDirectory.validateNamespace(self.ns)
            if mustExist, !directory.namespacesOnDisk().contains(self.ns) {
                let present = directory.namespacesOnDisk()
                throw EddyError(
                    .notFound,
                    "namespace \(self.ns) does not exist in \(self.data) (present: \(present.isEmpty ? "none" : present.joined(separator: ", ")))")
            }
            return try await body(try directory.engine(namespace: self.ns))
        } catch let error as EddyError {
            FileHandle.standardError.write(Data("eddy: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }
}

func parsePath(_ text: String) throws(EddyError) -> Path { try Path(text) }

/// A JSON argument, or standard input when it is "-".
func parseJSONArgument(_ text: String) throws(EddyError) -> Value {
    if text == "-" {
        let data = FileHandle.standardInput.readDataToEndOfFile()
        return try JSONParser.parse(Array(data))
    }
    return try JSONParser.parse(text)
}

func printLine(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the JSON value at a path.")
    @OptionGroup var options: DataOptions
    @Argument(help: "Path, e.g. /users/ada") var path = "/"
    @Flag(help: "Children as true instead of their values (Firebase shallow=true).") var shallow = false
    @Flag(help: "Indent the output.") var pretty = false

    func run() async throws {
        if let daemon = try self.options.daemon() {
            var value = try self.options.online(daemon) { daemon throws(EddyError) in try daemon.get(try parsePath(self.path), ns: self.options.ns) }
            if self.shallow, case .object(let children) = value { value = .object(children.mapValues { _ in .bool(true) }) }
            printLine(JSONWriter.string(value, pretty: self.pretty))
            return
        }
        let value = try await self.options.withEngine(mustExist: true) { engine throws(EddyError) in
            let path = try parsePath(self.path)
            return self.shallow ? try engine.readShallow(path) : try engine.readValue(path)
        }
        printLine(JSONWriter.string(value, pretty: self.pretty))
    }
}

/// The REST query parameters as options (JSON texts, as in the REST API).
struct QueryOptions: ParsableArguments {
    @Option(name: .customLong("order-by"), help: #"JSON: "$key", "$value" or "child/path""#) var orderBy: String?
    @Option(name: .customLong("start-at"), help: "JSON value[,\"key\"]") var startAt: String?
    @Option(name: .customLong("start-after"), help: "JSON value[,\"key\"]") var startAfter: String?
    @Option(name: .customLong("end-at"), help: "JSON value[,\"key\"]") var endAt: String?
    @Option(name: .customLong("end-before"), help: "JSON value[,\"key\"]") var endBefore: String?
    @Option(name: .customLong("equal-to"), help: "JSON value[,\"key\"]") var equalTo: String?
    @Option(name: .customLong("limit-to-first"), help: "Positive integer") var limitToFirst: Int?
    @Option(name: .customLong("limit-to-last"), help: "Positive integer") var limitToLast: Int?

    /// The given parameters by their REST names, in a fixed order.
    var given: [(name: String, value: String)] {
        let all: [(String, String?)] = [
            ("orderBy", self.orderBy), ("startAt", self.startAt), ("startAfter", self.startAfter), ("endAt", self.endAt),
            ("endBefore", self.endBefore), ("equalTo", self.equalTo), ("limitToFirst", self.limitToFirst.map(String.init)),
            ("limitToLast", self.limitToLast.map(String.init)),
        ]
        return all.compactMap { name, value in value.map { (name, $0) } }
    }
}

struct QueryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Run an ordered query; options take JSON values as in the REST API.",
        discussion: #"Example: eddy query /users --order-by '"$key"' --start-at '"b"' --limit-to-first 10"#)
    @OptionGroup var options: DataOptions
    @Argument(help: "Location whose children are queried, e.g. /users") var path: String
    @OptionGroup var query: QueryOptions
    @Flag(help: "Indent the output.") var pretty = false

    func validate() throws {
        guard self.query.orderBy != nil else { throw ValidationError("Missing expected argument '--order-by <order-by>'") }
    }

    func run() async throws {
        if let daemon = try self.options.daemon() {
            let value = try self.options.online(daemon) { daemon throws(EddyError) in
                try daemon.query(try parsePath(self.path), parameters: self.query.given, ns: self.options.ns)
            }
            printLine(JSONWriter.string(value, pretty: self.pretty))
            return
        }
        let value = try await self.options.withEngine(mustExist: true) { engine throws(EddyError) in
            var parameters = QueryParameters()
            for (name, value) in self.query.given { try parameters.add(name, value) }
            guard let query = try parameters.build() else { return Value.null }
            return try engine.readQuery(try parsePath(self.path), query)
        }
        printLine(JSONWriter.string(value, pretty: self.pretty))
    }
}

struct RulesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules", abstract: "Print or replace the rules document ({\"rules\": {...}}).",
        subcommands: [RulesGet.self, RulesSet.self])
}

struct RulesGet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Print the rules document.")
    @OptionGroup var options: DataOptions

    func run() async throws {
        if let daemon = try self.options.daemon() {
            let document = try self.options.online(daemon) { daemon throws(EddyError) in try daemon.rules(ns: self.options.ns) }
            printLine(JSONWriter.string(document, pretty: true))
            return
        }
        let rules = try await self.options.withEngine(mustExist: true) { engine throws(EddyError) in try engine.rules() }
        printLine(JSONWriter.string(rules.json, pretty: true))
    }
}

struct RulesSet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Replace the rules document with a JSON file (- for standard input).")
    @OptionGroup var options: DataOptions
    @Argument(help: "File holding {\"rules\": {...}}, or -") var file: String

    func run() async throws {
        if let daemon = try self.options.daemon() {
            let count = try self.options.online(daemon) { daemon throws(EddyError) in
                try daemon.setRules(try self.document(), ns: self.options.ns)
            }
            printLine("rules set: \(count) .indexOn declaration(s)")
            return
        }
        let rules = try await self.options.withEngine(mustExist: false) { engine throws(EddyError) in
            try await engine.setRules(try self.document())
        }
        printLine("rules set: \(rules.indexes.count) .indexOn declaration(s)")
    }

    /// The document, with its comments (allowed as in Firebase's rules files) blanked.
    private func document() throws(EddyError) -> Value {
        let data: Data
        if self.file == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let read = FileManager.default.contents(atPath: self.file) else {
                throw EddyError(.notFound, "cannot read rules file \(self.file)")
            }
            data = read
        }
        return try JSONParser.parse(RulesComments.blanked(Array(data)))
    }
}

struct Set: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Replace the value at a path (null removes).")
    @OptionGroup var options: DataOptions
    @Argument(help: "Path, e.g. /users/ada") var path: String
    @Argument(help: "JSON value, or - to read standard input") var json: String

    func run() async throws {
        if let daemon = try self.options.daemon() {
            let value = try self.options.online(daemon) { daemon throws(EddyError) in
                let value = try parseJSONArgument(self.json)
                _ = try daemon.write("set", try parsePath(self.path), value, ns: self.options.ns)
                return value
            }
            printLine(JSONWriter.string(value))
            return
        }
        let written = try await self.options.withEngine(mustExist: false) { engine throws(EddyError) in
            try await engine.set(try parsePath(self.path), try parseJSONArgument(self.json)).committed!
        }
        printLine(JSONWriter.string(written.value))
    }
}

struct Update: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Multi-path update: a JSON object of relative paths to values (null removes).")
    @OptionGroup var options: DataOptions
    @Argument(help: "Location, e.g. /users") var path: String
    @Argument(help: "JSON object such as {\"ada/born\": 1815}, or - for standard input") var json: String

    func run() async throws {
        if let daemon = try self.options.daemon() {
            let value = try self.options.online(daemon) { daemon throws(EddyError) in
                let value = try parseJSONArgument(self.json)
                _ = try daemon.write("update", try parsePath(self.path), value, ns: self.options.ns)
                return value
            }
            printLine(JSONWriter.string(value))
            return
        }
        let written = try await self.options.withEngine(mustExist: false) { engine throws(EddyError) in
            let update = try WriteOperation.update(at: try parsePath(self.path), body: try parseJSONArgument(self.json))
            return try await engine.write(update).committed!
        }
        printLine(JSONWriter.string(written.value))
    }
}

struct Push: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Add a child under a new push ID; prints the ID.")
    @OptionGroup var options: DataOptions
    @Argument(help: "Location, e.g. /messages") var path: String
    @Argument(help: "JSON value, or - for standard input") var json: String

    func run() async throws {
        if let daemon = try self.options.daemon() {
            let written = try self.options.online(daemon) { daemon throws(EddyError) in
                try daemon.write("push", try parsePath(self.path), try parseJSONArgument(self.json), ns: self.options.ns)
            }
            printLine(JSONWriter.string(.object(["name": written["name"]])))
            return
        }
        let written = try await self.options.withEngine(mustExist: false) { engine throws(EddyError) in
            try await engine.push(try parsePath(self.path), try parseJSONArgument(self.json))
        }
        printLine(JSONWriter.string(.object(["name": .string(written.pushedKey ?? "")])))
    }
}

struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Remove the value at a path.")
    @OptionGroup var options: DataOptions
    @Argument(help: "Path, e.g. /users/ada") var path: String

    func run() async throws {
        if let daemon = try self.options.daemon() {
            _ = try self.options.online(daemon) { daemon throws(EddyError) in
                try daemon.write("remove", try parsePath(self.path), nil, ns: self.options.ns)
            }
            printLine("null")
            return
        }
        _ = try await self.options.withEngine(mustExist: false) { engine throws(EddyError) in
            try await engine.remove(try parsePath(self.path))
        }
        printLine("null")
    }
}

struct Log: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print operation-log entries as JSON lines, oldest first.")
    @OptionGroup var options: DataOptions
    @Option(help: "Only entries after this log id.") var since: String?
    @Option(help: "At most this many entries. Default: all.") var limit: Int?

    func run() async throws {
        try await self.options.withEngine(mustExist: true, offlineCommand: "log") { engine throws(EddyError) in
            var after: LogID? = nil
            if let since = self.since {
                guard let id = LogID(since) else {
                    throw EddyError(.invalidArgument, "--since \(since) is not a log id (20 push-ID characters)")
                }
                after = id
            }
            var remaining = self.limit ?? Int.max
            while remaining > 0 {
                let page = try engine.readLogEntries(after: after, limit: min(remaining, Limits.logReadCountMax))
                for entry in page { printLine(JSONWriter.string(entry.json)) }
                guard let last = page.last else { break }
                after = last.id
                remaining -= page.count
            }
        }
    }
}

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check that the tree is well-formed, the log ordered and decodable, and that they agree.",
        discussion: "Exit status: 0 healthy, 3 a problem was found (printed), 1 the check could not run.")
    @OptionGroup var options: DataOptions

    func run() async throws {
        let report = try await self.options.withEngine(mustExist: true, offlineCommand: "verify") { engine throws(EddyError) in
            try engine.verify()
        }
        printLine("namespace \(self.options.ns): \(report)")
        if !report.isHealthy { throw ExitCode(3) }
    }
}

struct IndexCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index", abstract: "Inspect indexes or finish their builds (indexes are declared with `.indexOn` in the rules).",
        subcommands: [IndexStatusCommand.self, IndexBuildCommand.self])
}

struct IndexStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print each index as a JSON line: location, on, state (building|ready), children indexed, build position.",
        discussion: "Offline on --data, or from a running daemon with --url (GET /.settings/indexes.json).")
    @OptionGroup var options: DataOptions

    func run() async throws {
        if let url = self.options.url {
            // A running daemon (its builds in progress): GET /.settings/indexes.json.
            let answer: [Value]
            do {
                answer = try DaemonHTTPConnection(url: url, adminTokenFile: self.options.adminTokenFile).indexes(ns: self.options.ns)
            } catch {
                FileHandle.standardError.write(Data("eddy: \(error.message)\n".utf8))
                throw ExitCode(1)
            }
            for status in answer { printLine(JSONWriter.string(status)) }
            return
        }
        if self.options.socket != nil {
            FileHandle.standardError.write(
                Data("eddy: eddy index status asks a running daemon with --url (its HTTP address), not --socket; or reads a stopped one's --data\n".utf8))
            throw ExitCode(1)
        }
        let statuses = try await self.options.withEngine(mustExist: true, offlineCommand: "index status") {
            engine throws(EddyError) in engine.indexStatus()
        }
        for status in statuses { printLine(JSONWriter.string(status.json)) }
    }
}

struct IndexBuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build", abstract: "Run pending index builds to completion, printing progress to standard error.")
    @OptionGroup var options: DataOptions

    func run() async throws {
        let statuses = try await self.options.withEngine(mustExist: true, runIndexBuilds: true, offlineCommand: "index build") {
            engine throws(EddyError) in
            let started = ContinuousClock.now
            var lastReport = ContinuousClock.now
            while let building = engine.indexStatus().first(where: { $0.state == .building }) {
                if let failure = engine.failure { throw failure }
                if ContinuousClock.now - lastReport >= .seconds(1) {
                    lastReport = .now
                    FileHandle.standardError.write(
                        Data("eddy: building \(building.location) .indexOn \(building.on): \(building.indexedCount) children indexed, at \(building.position ?? "?")\n".utf8))
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
            // A finished build is compacted in the background; closing now would cut that short
            // and leave the entries in the slower shape queries read (see Committer.settle).
            if engine.indexCompactionsPending > 0 {
                FileHandle.standardError.write(Data("eddy: compacting the built index entries\n".utf8))
                while engine.indexCompactionsPending > 0 { try? await Task.sleep(for: .milliseconds(20)) }
            }
            let seconds = (ContinuousClock.now - started).seconds
            FileHandle.standardError.write(Data("eddy: every index is ready (\(String(format: "%.1f", seconds)) s)\n".utf8))
            return engine.indexStatus()
        }
        for status in statuses { printLine(JSONWriter.string(status.json)) }
    }
}

extension Duration {
    var seconds: Double {
        let (s, attoseconds) = self.components
        return Double(s) + Double(attoseconds) / 1e18
    }
}

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print live events of a location (and query) from a running eddyd, as JSON lines.",
        discussion: #"""
            Connects to the daemon's native socket (--socket, default <data>/eddyd.sock). The first line is
            {"subscribed": {"liveAfter": ...}}; then one line per event: {"kind", "key", "prev", "value", "logID"}.
            The first value event holds the whole value; later ones hold only what changed:
            {"kind": "value", "logID", "changes": [{"op": "put"|"patch", "path", "data"}]}.
            Query options take JSON values as in the REST API, e.g. --order-by '"score"' --limit-to-last 10.
            """#)
    @Argument(help: "Location, e.g. /users") var path: String
    @Option(name: .long, help: "Data directory of the daemon (to find its socket). Default: ./data") var data = "./data"
    @Option(name: .long, help: "Native protocol socket. Default: <data>/eddyd.sock") var socket: String?
    @Option(name: .long, help: "Namespace. Default: default") var ns = "default"
    @OptionGroup var query: QueryOptions
    @Option(name: .long, help: "Resume after this log id: the events of every entry after it, then the live ones (resume from the last id received)") var since: String?
    @Option(name: .customLong("max-events"), help: "Exit after this many events (default: run until interrupted)") var maxEvents: Int?
    @Option(name: .long, help: "all: child and value events; value: value events (the changes) only. Default: all") var events = "all"

    func run() throws {
        var query: [String: Value] = [:]
        for (name, value) in self.query.given { query[name] = .string(value) }
        var request: [String: Value] = ["path": .string(self.path), "ns": .string(self.ns)]
        if !query.isEmpty { request["query"] = .object(query) }
        if let since { request["since"] = .string(since) }
        request["events"] = .string(self.events)
        let socketPath = self.socket ?? self.data + "/eddyd.sock"
        do {
            let client = try NativeClient(path: socketPath)
            // Until the subscription is confirmed; then it may be quiet for hours.
            client.setReceiveTimeout(seconds: DaemonConnection.answerTimeoutSeconds)
            try client.send(Frame(kind: .subscribe, requestID: 1, payload: JSONWriter.bytes(.object(request))))
            var events = 0
            while let frame = try client.receive() {
                let payload = (try? JSONParser.parse(frame.payload)) ?? .null
                switch frame.kind {
                case .subscribed:
                    client.setReceiveTimeout(seconds: nil)
                    printLine(#"{"subscribed":"# + JSONWriter.string(payload) + "}")
                case .events:
                    guard case .object(let list) = payload["events"] else { continue }
                    for index in 0..<list.count {
                        printLine(JSONWriter.string(list[String(index)] ?? .null))
                        events += 1
                        if let maxEvents, events >= maxEvents { return }
                    }
                case .error:
                    FileHandle.standardError.write(Data("eddy: \(payload["message"].stringValue ?? "error")\n".utf8))
                    throw ExitCode(1)
                case .behind:
                    FileHandle.standardError.write(
                        Data("eddy: fell too far behind; the daemon disconnected after \(payload["lastDelivered"].stringValue ?? "nothing")\n".utf8))
                    throw ExitCode(2)
                default:
                    continue
                }
            }
            FileHandle.standardError.write(Data("eddy: the daemon closed the connection\n".utf8))
            throw ExitCode(2)
        } catch let error as ProtocolError {
            FileHandle.standardError.write(Data("eddy: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }
}

extension Value {
    fileprivate var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}
