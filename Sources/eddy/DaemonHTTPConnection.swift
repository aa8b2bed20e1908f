// The CLI's way to a daemon over HTTP (`--url http://HOST:PORT`, or https): the Firebase REST
// API the daemon serves, with the admin secret as `Authorization: Bearer` when
// `--admin-token-file` is given. For a daemon on another machine, or one whose socket the user
// cannot open. Requests are made one at a time and waited for (the CLI is sequential).
//
// `set`/`update`/`push`/`remove` are PUT/PATCH/POST/DELETE; `query` is a GET with the REST
// parameters; the rules are `/.settings/rules.json`. `stream` copies a GET's body as it arrives
// (`eddy export --url`): the daemon streams large answers, so neither side holds it whole.

import EddyModel
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

final class DaemonHTTPConnection: DaemonLink {
    private let base: String
    private let token: String?
    private let session: URLSession
    var address: String { self.base }

    /// Seconds a request may wait for the daemon's next bytes.
    static let requestTimeoutSeconds: TimeInterval = 120

    init(url: String, adminTokenFile: String?) throws(EddyError) {
        var base = url
        while base.hasSuffix("/") { base.removeLast() }
        guard let parsed = URL(string: base), let scheme = parsed.scheme, scheme == "http" || scheme == "https", parsed.host != nil else {
            throw EddyError(.invalidArgument, "--url \(url) is not an http:// or https:// URL with a host (e.g. http://127.0.0.1:9000)")
        }
        self.base = base
        self.token = try adminTokenFile.map { file throws(EddyError) in try DaemonConnection.readToken(file) }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = Self.requestTimeoutSeconds
        self.session = URLSession(configuration: configuration)
    }

    // MARK: DaemonLink

    func get(_ path: Path, ns: String) throws(EddyError) -> Value {
        try self.json("GET", self.url(path, ns: ns, [:]))
    }

    func query(_ path: Path, parameters: [(name: String, value: String)], ns: String) throws(EddyError) -> Value {
        var query: [String: String] = [:]
        for (name, value) in parameters { query[name] = value }
        return try self.json("GET", self.url(path, ns: ns, query))
    }

    func write(_ op: String, _ path: Path, _ value: Value?, ns: String) throws(EddyError) -> Value {
        let url = try self.url(path, ns: ns, [:])
        let body = value.map { JSONWriter.bytes($0) }
        switch op {
        case "set": return try self.json("PUT", url, body: body)
        case "update": return try self.json("PATCH", url, body: body)
        case "push": return try self.json("POST", url, body: body)
        case "remove": return try self.json("DELETE", url)
        default: throw EddyError(.invalidArgument, "unknown write \(op)")
        }
    }

    func rules(ns: String) throws(EddyError) -> Value {
        try self.json("GET", self.settingsURL("rules", ns: ns))
    }

    /// `GET /.settings/indexes.json`: each index's status, in the daemon's order.
    func indexes(ns: String) throws(EddyError) -> [Value] {
        // JSON arrays parse as objects keyed "0", "1", ...
        guard case .object(let top) = try self.json("GET", self.settingsURL("indexes", ns: ns)) else { return [] }
        guard case .object(let items)? = top["indexes"] else { return [] }
        return items.sorted { (Int($0.key) ?? 0) < (Int($1.key) ?? 0) }.map(\.value)
    }

    func setRules(_ document: Value, ns: String) throws(EddyError) -> Int {
        _ = try self.json("PUT", self.settingsURL("rules", ns: ns), body: JSONWriter.bytes(document))
        // REST answers the document; count its declarations as the daemon did.
        var count = 0
        func walk(_ value: Value) {
            guard case .object(let children) = value else { return }
            for (key, child) in children {
                if key == ".indexOn" { count += 1 } else { walk(child) }
            }
        }
        walk(document["rules"])
        return count
    }

    /// GETs `path` (with `parameters`) and hands its body to `write` as it arrives.
    func stream(_ path: Path, ns: String, parameters: [String: String], _ write: @escaping (Data) -> Void) throws(EddyError) {
        let request = self.request("GET", try self.url(path, ns: ns, parameters), body: nil)
        let receiver = StreamReceiver(write: write)
        let session = URLSession(configuration: self.session.configuration, delegate: receiver, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        session.dataTask(with: request).resume()
        receiver.done.wait()
        if let error = receiver.error {
            throw EddyError(.unavailable, "reading \(self.base): \(error.localizedDescription) (the output is incomplete)")
        }
        if receiver.status >= 300 {
            throw Self.refusal(receiver.status, receiver.errorBody, from: self.base)
        }
    }

    // MARK: Requests

    private func url(_ path: Path, ns: String, _ parameters: [String: String]) throws(EddyError) -> URL {
        var text = self.base
        for key in path.keys {
            text += "/" + (key.addingPercentEncoding(withAllowedCharacters: Self.keyCharacters) ?? key)
        }
        text += path.keys.isEmpty ? "/.json" : ".json"
        return try self.finish(text, ns: ns, parameters)
    }

    private func settingsURL(_ name: String, ns: String) throws(EddyError) -> URL {
        try self.finish(self.base + "/.settings/\(name).json", ns: ns, [:])
    }

    private func finish(_ text: String, ns: String, _ parameters: [String: String]) throws(EddyError) -> URL {
        var components = URLComponents(string: text)
        var items = parameters.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
        if ns != "default" { items.append(URLQueryItem(name: "ns", value: ns)) }
        if !items.isEmpty { components?.queryItems = items }
        // URLComponents leaves "+" alone, which a server reads as a space.
        let encodedQuery = components?.percentEncodedQuery
        components?.percentEncodedQuery = encodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        guard let url = components?.url else { throw EddyError(.invalidArgument, "cannot make a URL of \(text)") }
        return url
    }

    private func request(_ method: String, _ url: URL, body: [UInt8]?) -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let token = self.token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpBody = Data(body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return request
    }

    private func json(_ method: String, _ url: URL, body: [UInt8]? = nil) throws(EddyError) -> Value {
        let request = self.request(method, url, body: body)
        let finished = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var outcome: (Data?, URLResponse?, (any Error)?) = (nil, nil, nil)
        self.session.dataTask(with: request) { data, response, error in
            outcome = (data, response, error)
            finished.signal()
        }.resume()
        finished.wait()
        if let error = outcome.2 {
            throw EddyError(.unavailable, "cannot reach the daemon at \(self.base): \(error.localizedDescription)")
        }
        let status = (outcome.1 as? HTTPURLResponse)?.statusCode ?? 0
        let data = outcome.0 ?? Data()
        guard (200..<300).contains(status) else { throw Self.refusal(status, data, from: self.base) }
        if data.isEmpty { return .null }
        do {
            return try JSONParser.parse(Array(data))
        } catch {
            throw EddyError(.internal, "the daemon at \(self.base) answered with invalid JSON: \(error.message)")
        }
    }

    private static func refusal(_ status: Int, _ body: Data, from base: String) -> EddyError {
        var message = String(decoding: body, as: UTF8.self)
        if let value = try? JSONParser.parse(Array(body)), case .string(let text) = value["error"] { message = text }
        return EddyError(.unavailable, "the daemon at \(base) refused (HTTP \(status)): \(message)")
    }

    /// Unreserved characters (RFC 3986): everything else in a key is percent-encoded.
    private static let keyCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_~")
}

/// Receives a streamed GET: the body's pieces go to `write` in order; `done` is signalled at
/// the end (or on an error).
private final class StreamReceiver: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: the session calls its delegate on one serial queue; the reader waits on `done`.
    let write: (Data) -> Void
    let done = DispatchSemaphore(value: 0)
    var status = 0
    var error: (any Error)?
    var errorBody = Data()

    init(write: @escaping (Data) -> Void) {
        self.write = write
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        self.status = (response as? HTTPURLResponse)?.statusCode ?? 0
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if self.status >= 300 {
            if self.errorBody.count < 64 * 1024 { self.errorBody.append(data) }
        } else {
            self.write(data)
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        self.error = error
        self.done.signal()
    }
}
