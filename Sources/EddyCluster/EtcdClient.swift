// The few calls of etcd's v3 API that cluster membership and election need, through etcd's JSON
// gateway (`POST /v3/...`, keys and values base64, 64-bit integers as strings; etcd 3.4+).
// Each call tries the endpoints in order, starting with the one that answered last, and fails
// with `unavailable` (naming every endpoint) when none answers within the timeout.
//
// Blocking; thread-safe (the only shared state is which endpoint answered last).

import EddyModel
import Foundation
import Synchronization

public final class EtcdClient: Sendable {
    /// A stored key.
    public struct KeyValue: Sendable, Equatable {
        public var key: String
        public var value: [UInt8]
        /// The revision that created the key: it grows with every creation, so it orders
        /// creations (the leader key's is the leadership term).
        public var createRevision: Int64
        public var modRevision: Int64
        /// 0 when the key is not attached to a lease.
        public var lease: Int64
    }

    public let endpoints: [(host: String, port: Int)]
    let timeout: Duration
    private let preferred = Atomic<Int>(0)

    /// `urls`: `http://host:port` (a missing port is 2379); `https` is refused (no TLS to etcd yet).
    public init(urls: [String], timeout: Duration = .seconds(2)) throws(EddyError) {
        var endpoints: [(String, Int)] = []
        for url in urls {
            guard url.hasPrefix("http://") else {
                throw EddyError(.invalidArgument, "etcd endpoint \(url.debugDescription): give http://HOST:PORT (TLS to etcd is not supported)")
            }
            var rest = url.dropFirst("http://".count)
            if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
            let host: Substring
            var port = 2379
            if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
                guard let parsed = Int(rest[rest.index(after: colon)...]), (1...65535).contains(parsed) else {
                    throw EddyError(.invalidArgument, "etcd endpoint \(url.debugDescription): the port is not a number in 1...65535")
                }
                host = rest[..<colon]
                port = parsed
            } else {
                host = rest
            }
            let bare = host.hasPrefix("[") && host.hasSuffix("]") ? host.dropFirst().dropLast() : host
            guard !bare.isEmpty else { throw EddyError(.invalidArgument, "etcd endpoint \(url.debugDescription) has no host") }
            endpoints.append((String(bare), port))
        }
        guard !endpoints.isEmpty else { throw EddyError(.invalidArgument, "no etcd endpoint given") }
        self.endpoints = endpoints
        self.timeout = timeout
    }

    // MARK: Leases

    /// A new lease of `ttlSeconds`; returns its id.
    public func grantLease(ttlSeconds: Int) throws(EddyError) -> Int64 {
        let answer = try self.call("/v3/lease/grant", #"{"TTL":"\#(ttlSeconds)"}"#)
        guard let id = Self.int64(answer, "ID"), id != 0 else {
            throw EddyError(.unavailable, "etcd granted no lease: \(Self.describe(answer))")
        }
        return id
    }

    /// Renews `lease`; returns the seconds it now has left, 0 when it had already expired (or
    /// never existed).
    public func keepAlive(lease: Int64) throws(EddyError) -> Int {
        let answer = try self.call("/v3/lease/keepalive", #"{"ID":"\#(lease)"}"#)
        guard case .object(let object) = answer, let result = object["result"] else {
            throw EddyError(.unavailable, "etcd's keepalive answer has no result: \(Self.describe(answer))")
        }
        return Int(Self.int64(result, "TTL") ?? 0)
    }

    public func revoke(lease: Int64) throws(EddyError) {
        _ = try self.call("/v3/lease/revoke", #"{"ID":"\#(lease)"}"#)
    }

    // MARK: Keys

    /// Creates `key` with `value` attached to `lease` unless it exists. Returns the key as stored
    /// afterwards and whether this call created it.
    public func createIfAbsent(_ key: String, value: [UInt8], lease: Int64) throws(EddyError) -> (created: Bool, current: KeyValue?) {
        // Base64 and decimal digits need no JSON escaping.
        let encodedKey = Self.base64(Array(key.utf8))
        let answer = try self.call(
            "/v3/kv/txn",
            #"{"compare":[{"key":"\#(encodedKey)","result":"EQUAL","target":"CREATE","create_revision":"0"}],"#
                + #""success":[{"request_put":{"key":"\#(encodedKey)","value":"\#(Self.base64(value))","lease":"\#(lease)"}}],"#
                + #""failure":[{"request_range":{"key":"\#(encodedKey)"}}]}"#)
        // Created: the key is this transaction's put, so its create revision is the answer's
        // header revision. Not created: the failure branch's range holds the key as it is (or
        // nothing, when it was deleted in between). One round trip either way.
        if answer.child(at: Path(validatedKeys: ["succeeded"])) == .bool(true) {
            guard let revision = Self.int64(answer.child(at: Path(validatedKeys: ["header"])), "revision"), revision > 0 else {
                throw EddyError(.unavailable, "etcd's transaction answer has no header revision: \(Self.describe(answer))")
            }
            return (true, KeyValue(key: key, value: value, createRevision: revision, modRevision: revision, lease: lease))
        }
        let kvs = answer.child(at: Path(validatedKeys: ["responses", "0", "response_range", "kvs"]))
        guard case .object(let list) = kvs, let first = list["0"] else { return (false, nil) }
        return (false, try Self.keyValue(first))
    }

    /// Sets `key` (attached to `lease` unless it is 0).
    public func put(_ key: String, value: [UInt8], lease: Int64 = 0) throws(EddyError) {
        _ = try self.call(
            "/v3/kv/put", #"{"key":"\#(Self.base64(Array(key.utf8)))","value":"\#(Self.base64(value))","lease":"\#(lease)"}"#)
    }

    public func get(_ key: String) throws(EddyError) -> KeyValue? {
        try self.range(#"{"key":"\#(Self.base64(Array(key.utf8)))"}"#).first
    }

    /// Every key that starts with `prefix`, in key order.
    public func list(prefix: String) throws(EddyError) -> [KeyValue] {
        var end = Array(prefix.utf8)
        guard let last = end.last, last < 0xFF else { throw EddyError(.invalidArgument, "etcd prefix must not end in 0xFF") }
        end[end.count - 1] = last + 1
        return try self.range(#"{"key":"\#(Self.base64(Array(prefix.utf8)))","range_end":"\#(Self.base64(end))"}"#)
    }

    public func delete(_ key: String) throws(EddyError) {
        _ = try self.call("/v3/kv/deleterange", #"{"key":"\#(Self.base64(Array(key.utf8)))"}"#)
    }

    private func range(_ request: String) throws(EddyError) -> [KeyValue] {
        let answer = try self.call("/v3/kv/range", request)
        guard case .object(let object) = answer, case .object(let list)? = object["kvs"] else { return [] }
        // Value holds JSON arrays as objects keyed "0", "1", ...
        return try list.sorted { Int($0.key) ?? 0 < Int($1.key) ?? 0 }.map { (_, entry) throws(EddyError) in try Self.keyValue(entry) }
    }

    // MARK: Transport

    /// POSTs to the first endpoint that answers, starting with the last one that did.
    func call(_ path: String, _ body: String) throws(EddyError) -> Value {
        let start = self.preferred.load(ordering: .relaxed)
        var failures: [String] = []
        for offset in 0..<self.endpoints.count {
            let index = (start + offset) % self.endpoints.count
            let endpoint = self.endpoints[index]
            let exchange = EtcdHTTPExchange(host: endpoint.host, port: endpoint.port, timeout: self.timeout)
            let outcome: Result<(status: Int, body: Value), EddyError>
            do {
                outcome = .success(try exchange.post(path, body))
            } catch {
                outcome = .failure(error)
            }
            switch outcome {
            case .success(let answer) where answer.status == 200:
                self.preferred.store(index, ordering: .relaxed)
                return answer.body
            case .success(let answer):
                // A request etcd refuses is refused by every member: no point trying the others.
                throw EddyError(.unavailable, "etcd at \(exchange.display) answered \(path) with HTTP \(answer.status): \(Self.describe(answer.body))")
            case .failure(let error):
                failures.append(error.message)
            }
        }
        throw EddyError(.unavailable, failures.joined(separator: "; "))
    }

    // MARK: JSON

    static func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    static func int64(_ value: Value, _ key: String) -> Int64? {
        guard case .object(let object) = value, let field = object[key] else { return nil }
        switch field {
        case .string(let text): return Int64(text)
        case .number(let number): return Int64(exactly: number)
        default: return nil
        }
    }

    static func keyValue(_ entry: Value) throws(EddyError) -> KeyValue {
        guard case .object(let object) = entry, case .string(let key)? = object["key"], let keyBytes = Data(base64Encoded: key) else {
            throw EddyError(.unavailable, "etcd returned a key-value without a key: \(Self.describe(entry))")
        }
        var value: [UInt8] = []
        if case .string(let encoded)? = object["value"] {
            guard let decoded = Data(base64Encoded: encoded) else { throw EddyError(.unavailable, "etcd returned a value that is not base64") }
            value = Array(decoded)
        }
        return KeyValue(
            key: String(decoding: keyBytes, as: UTF8.self), value: value, createRevision: Self.int64(entry, "create_revision") ?? 0,
            modRevision: Self.int64(entry, "mod_revision") ?? 0, lease: Self.int64(entry, "lease") ?? 0)
    }

    static func describe(_ value: Value) -> String {
        String(String(decoding: JSONWriter.bytes(value), as: UTF8.self).prefix(300))
    }
}
