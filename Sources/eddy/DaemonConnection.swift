// The `eddy` CLI's way to a running daemon: its native socket (`<data>/eddyd.sock` by default,
// or --socket), with the admin secret sent first when --admin-token-file is given. `get`,
// `query`, `set`, `update`, `push` and `remove` use it whenever a daemon answers there, and open
// the data directory themselves (offline) only when none does or with --offline; maintenance
// commands (`verify`, `digest`, `log`, `index build`) are offline only and say so when a daemon
// holds the directory.

import EddyEngine
import EddyModel
import EddyProtocol
import Foundation

final class DaemonConnection: DaemonLink {
    private let client: NativeClient
    private var nextRequestID: UInt64 = 1
    let socketPath: String
    var address: String { self.socketPath }

    private init(client: NativeClient, socketPath: String) {
        self.client = client
        self.socketPath = socketPath
    }

    /// A connection when a daemon answers on `socketPath`; nil when nothing listens there (no
    /// socket file, or a stale one).
    static func connect(socketPath: String, adminTokenFile: String?) throws(EddyError) -> DaemonConnection? {
        guard FileManager.default.fileExists(atPath: socketPath) else { return nil }
        let client: NativeClient
        do {
            client = try NativeClient(path: socketPath)
        } catch {
            return nil  // a socket file left by a daemon that is gone
        }
        client.setReceiveTimeout(seconds: Self.answerTimeoutSeconds)
        let connection = DaemonConnection(client: client, socketPath: socketPath)
        if let file = adminTokenFile {
            _ = try connection.request(.auth, ["token": .string(try Self.readToken(file))])
        }
        return connection
    }

    /// How long a request waits for the daemon's next bytes (`EDDY_TIMEOUT_SECONDS`, default
    /// 300): a socket that accepts and never answers (a hung daemon, something else listening)
    /// must not hang a script for ever. Generous, as a large write answers only once it is
    /// committed.
    static var answerTimeoutSeconds: Int {
        if let text = ProcessInfo.processInfo.environment["EDDY_TIMEOUT_SECONDS"], let seconds = Int(text), seconds > 0 { return seconds }
        return 300
    }

    /// What a timed-out request's error adds.
    static let timeoutHint = "(EDDY_TIMEOUT_SECONDS sets how long eddy waits; is it eddyd's client socket?)"

    /// The admin secret in `file` (trimmed).
    static func readToken(_ file: String) throws(EddyError) -> String {
        do {
            return try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            throw EddyError(.invalidArgument, "--admin-token-file \(file) cannot be read: \(error.localizedDescription)")
        }
    }

    /// One request; the answer's payload, or the daemon's error (its code and message).
    func request(_ kind: Frame.Kind, _ body: [String: Value]) throws(EddyError) -> Value {
        let id = self.nextRequestID
        self.nextRequestID += 1
        let answer: Frame?
        do {
            try self.client.send(Frame(kind: kind, requestID: id, payload: JSONWriter.bytes(.object(body))))
            answer = try self.client.receive()
        } catch {
            let hint = error.message.hasPrefix("no answer within") ? " " + Self.timeoutHint : ""
            throw EddyError(.unavailable, "talking to the daemon on \(self.socketPath): \(error.message)\(hint)")
        }
        guard let frame = answer else { throw EddyError(.unavailable, "the daemon on \(self.socketPath) closed the connection") }
        // Anything but the answer to this request (a replication listener's `refused`, say) is
        // not success: the request was not done.
        guard frame.kind == .error || frame.kind == .value || frame.kind == .written, frame.requestID == id || frame.kind == .error else {
            throw EddyError(
                .unavailable,
                "\(self.socketPath) answered with a \(frame.kind) frame for request \(frame.requestID), not an answer to request \(id): is it eddyd's client socket (eddyd.sock, not replication.sock)?"
            )
        }
        let payload: Value
        do {
            payload = try JSONParser.parse(frame.payload)
        } catch {
            throw EddyError(.internal, "the daemon answered with invalid JSON: \(error.message)")
        }
        if frame.kind == .error {
            let message: String
            if case .string(let m) = payload["message"] { message = m } else { message = JSONWriter.string(payload) }
            throw EddyError(.unavailable, "the daemon refused: \(message)")
        }
        return payload
    }

    func get(_ path: Path, ns: String) throws(EddyError) -> Value {
        try self.request(.get, ["path": .string(path.description), "ns": .string(ns)])["value"]
    }

    func query(_ path: Path, parameters: [(name: String, value: String)], ns: String) throws(EddyError) -> Value {
        var query: [String: Value] = [:]
        for (name, value) in parameters { query[name] = .string(value) }
        return try self.request(.query, ["path": .string(path.description), "query": .object(query), "ns": .string(ns)])["value"]
    }

    /// A write (`op`: set, update, push, remove); the `written` answer (`logID`, `name`).
    func write(_ op: String, _ path: Path, _ value: Value?, ns: String) throws(EddyError) -> Value {
        var body: [String: Value] = ["op": .string(op), "path": .string(path.description), "ns": .string(ns)]
        if let value { body["value"] = value }
        return try self.request(.write, body)
    }

    func rules(ns: String) throws(EddyError) -> Value {
        try self.request(.getRules, ["ns": .string(ns)])["value"]
    }

    func setRules(_ document: Value, ns: String) throws(EddyError) -> Int {
        guard case .number(let count) = try self.request(.setRules, ["ns": .string(ns), "document": document])["value"]["indexes"] else {
            throw EddyError(.internal, "the daemon's answer to setRules has no index count")
        }
        return Int(count)
    }
}
