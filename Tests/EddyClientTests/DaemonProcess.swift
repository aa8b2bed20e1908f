// A real `eddyd serve` for the client tests: a temp data directory, HTTP and the native
// protocol over TCP on free ports, the Unix socket in the data directory. The binary is
// `$EDDYD` or `.build/debug/eddyd` of this checkout (`make test` builds it first).

import EddyClient
import EddyTesting
import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

final class DaemonProcess: Sendable {
    let directory: String
    let dataDirectory: String
    private let state = Mutex<(process: SpawnedProcess?, nativeTCP: String?, http: String?)>((nil, nil, nil))

    init() throws {
        self.directory = NSTemporaryDirectory() + "eddy-client-\(UUID().uuidString)"
        self.dataDirectory = self.directory + "/data"
        try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
    }

    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["EDDYD"], !path.isEmpty { return path }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/eddyd").path
    }

    /// eddyd's standard error (its log), appended to across restarts.
    var logPath: String { self.directory + "/eddyd.log" }

    /// The last `lines` lines of eddyd's log that contain one of `containing` (for a failure
    /// message).
    func logTail(containing: [String], lines: Int = 20) -> String {
        let text = (try? String(contentsOfFile: self.logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { line in containing.contains { line.contains($0) } }.suffix(lines).joined(separator: "\n")
    }

    var socketURL: String { "eddy+unix://" + self.dataDirectory + "/eddyd.sock" }
    var tcpURL: String { "eddy://" + (self.state.withLock { $0.nativeTCP } ?? "?") }
    /// The HTTP listener, "http://127.0.0.1:PORT".
    var httpURL: String { self.state.withLock { $0.http } ?? "http://?" }
    /// The HTTP listener for the client's REST and SSE fallback (`?transport=rest`): an
    /// `http://` URL alone takes the native protocol on eddyd's HTTP port.
    var restURL: String { self.httpURL + "?transport=rest" }

    /// eddyd's count of open subscriptions over `transport` ("native" or "sse"), from its
    /// `eddy_subscriptions{transport=...}` metric.
    func subscriptions(over transport: String) async throws -> Double {
        let (body, _) = try await URLSession.shared.data(from: URL(string: self.httpURL + "/metrics")!)
        let line = String(decoding: body, as: UTF8.self).split(separator: "\n").first {
            $0.hasPrefix("eddy_subscriptions{") && $0.contains("transport=\"\(transport)\"")
        }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }

    /// Starts it and waits until it listens (its READY line), on a thread of its own: the wait
    /// reads eddyd's output, and blocking one of Swift's cooperative threads with it (two on a
    /// 2-core machine, shared by every suite) would stall the other suites' async work.
    /// `extra`: more `eddyd serve` arguments (credentials, ...).
    /// `http` and `nativeTCP`: the addresses to listen on (a free port by default).
    func start(_ extra: [String] = [], command: String = "serve", http httpAddress: String = "127.0.0.1:0", nativeTCP tcpAddress: String = "127.0.0.1:0") async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread {
                continuation.resume(with: Result { try self.startWaiting(extra, command: command, http: httpAddress, nativeTCP: tcpAddress) })
            }.start()
        }
    }

    private func startWaiting(_ extra: [String], command: String, http httpAddress: String, nativeTCP tcpAddress: String) throws {
        let process = try SpawnedProcess(
            Self.binary, [command, "--data", self.dataDirectory, "--http", httpAddress, "--native-listen", tcpAddress] + extra,
            errorPath: self.logPath)
        var text = ""
        let deadline = Date().addingTimeInterval(30)
        while !text.contains("eddyd: listening on") {
            let chunk = process.output.availableData
            if chunk.isEmpty {
                guard Date() < deadline, process.isRunning else { throw DaemonError("eddyd did not start: \(text)") }
                continue
            }
            text += String(decoding: chunk, as: UTF8.self)
        }
        var nativeTCP: String?
        var http: String?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("eddyd: native protocol on tcp://") {
                nativeTCP = String(line.dropFirst("eddyd: native protocol on tcp://".count))
            } else if line.hasPrefix("eddyd: listening on ") {
                http = line.dropFirst("eddyd: listening on ".count).split(separator: " ").first.map(String.init)
            }
        }
        self.state.withLock { $0 = (process, nativeTCP, http) }
    }

    /// PUT /.settings/rules.json over HTTP (the client has no rules API).
    func putRules(_ json: String) async throws {
        guard let http = self.state.withLock({ $0.http }), let url = URL(string: http + "/.settings/rules.json") else {
            throw DaemonError("no HTTP address")
        }
        var request = URLRequest(url: url)
        request.httpMethod = "PUT"
        request.httpBody = Data(json.utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw DaemonError("rules refused: \(response)") }
    }

    /// The JSON eddyd holds at `path`, read over HTTP with a plain GET (no client, no cache):
    /// what a failing test reports as the server's truth.
    func serverJSON(_ path: String) async -> String {
        guard let http = self.state.withLock({ $0.http }), let url = URL(string: http + "/" + path + ".json") else { return "(no HTTP address)" }
        do {
            let (body, _) = try await URLSession.shared.data(from: url)
            return String(decoding: body, as: UTF8.self)
        } catch {
            return "(GET failed: \(error))"
        }
    }

    /// Stops it (SIGTERM) and starts it again on the same addresses, so clients find it again.
    func restart() async throws {
        let (http, tcp) = self.state.withLock { ($0.http, $0.nativeTCP) }
        guard let http, let tcp else { throw DaemonError("not started") }
        self.stop()
        try await self.start(http: String(http.dropFirst("http://".count)), nativeTCP: tcp)
    }

    /// Sends `signal` to the running eddyd (SIGCONT resumes it after `pause`).
    func signal(_ signal: Int32) {
        self.state.withLock { $0.process }?.signal(signal)
    }

    /// Stops eddyd (SIGSTOP) and returns once it is stopped, so nothing sent after this is
    /// answered before `signal(SIGCONT)` (`SpawnedProcess.pause`).
    func pause() {
        self.state.withLock { $0.process }?.pause()
    }

    /// SIGKILL (a crash), or SIGTERM when `graceful`.
    func stop(graceful: Bool = true) {
        guard let process = self.state.withLock({ $0.process }) else { return }
        process.signal(graceful ? SIGTERM : SIGKILL)
        process.wait()
        self.state.withLock { $0.process = nil }
    }

    deinit {
        self.stop(graceful: false)
        try? FileManager.default.removeItem(atPath: self.directory)
    }
}

struct DaemonError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Collects what callbacks deliver, for a test to wait on.
final class Recorder<T: Sendable>: Sendable {
    private let items = Mutex<[T]>([])

    func add(_ item: T) { self.items.withLock { $0.append(item) } }

    var all: [T] { self.items.withLock { $0 } }

    /// Waits until at least `count` items arrived (at most `seconds`); returns them. The bound
    /// is for liveness, not speed: `make test` runs every suite at once on 2 cores, where a
    /// server's reaction has been seen to take more than 15 s.
    /// `explain`: more to say when it times out (what the server holds, say).
    func wait(for count: Int, seconds: Double = 60, explain: (@Sendable () async -> String)? = nil) async throws -> [T] {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let now = self.all
            if now.count >= count { return now }
            guard Date() < deadline else {
                let more = await explain?() ?? ""
                throw DaemonError("waited for \(count) items, got \(now.count): \(now)" + (more.isEmpty ? "" : "; \(more)"))
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

extension Recorder where T == Bool {
    /// The first values of a `.info/connected` observer, expected to be false then true, or true
    /// alone when the instance's first use (`reference`) connected before the observer was added.
    func connectedStart(sourceLocation: SourceLocation = #_sourceLocation) async throws -> [Bool] {
        if try await self.wait(for: 1) == [false] { _ = try await self.wait(for: 2) }
        let start = self.all
        #expect(start == [false, true] || start == [true], "\(start)", sourceLocation: sourceLocation)
        return start
    }
}

extension Database {
    /// The instance at `url`, calling back on `queue` (each suite's own, so a suite's blocks
    /// never wait for the main queue).
    static func database(url: String, callingBackOn queue: DispatchQueue) -> Database {
        let database = Database.database(url: url)
        database.callbackQueue = queue
        return database
    }
}
