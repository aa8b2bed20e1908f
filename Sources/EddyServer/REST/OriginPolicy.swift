// What a browser may do with the HTTP listener:
// - `Host` must be an IP literal, `localhost` (or `*.localhost`), a single-label machine name
//   (`db`, as on a LAN), or a configured name (`--allowed-host`): a DNS rebinding attack reaches
//   127.0.0.1 under an attacker's dotted name, which is refused here (403).
//   A request without `Host` (HTTP/1.0) passes.
// - A cross-origin request (an `Origin` that is not this server's own) gets CORS headers only
//   when its origin is configured (`--cors-origin`, `*` for any); a cross-origin write from an
//   origin that is not configured and without a credential is refused (403), so a web page cannot
//   make a visitor's browser write to a database on their machine. Preflights (`OPTIONS`) of
//   configured origins are answered 204.

import EddyModel
import HTTPTypes

public struct OriginPolicy: Sendable {
    /// Host names accepted in `Host` besides IP literals and localhost (lowercased).
    public var allowedHosts: Set<String> = []
    /// Origins answered with CORS headers (`scheme://host[:port]`, lowercased); "*" allows any.
    public var corsOrigins: Set<String> = []

    public init(allowedHosts: [String] = [], corsOrigins: [String] = []) {
        self.allowedHosts = Set(allowedHosts.map { $0.lowercased() })
        self.corsOrigins = Set(corsOrigins.map { $0.lowercased() })
    }

    /// Refuses a request whose Host or Origin is not allowed.
    func check(_ headers: HTTPFields, host: String?, method: RESTRequest.Method) throws(RESTError) {
        if let host, !self.allowsHost(host) {
            throw RESTError(
                status: 403,
                message: "Host \"\(host)\" is not allowed (DNS rebinding protection); use an IP address or localhost, or add the name with --allowed-host")
        }
        guard let origin = self.crossOrigin(headers, host: host) else { return }
        let writes = method != .get
        let credentialed = headers[.authorization] != nil
        if writes, !credentialed, !self.allowsOrigin(origin) {
            throw RESTError(
                status: 403,
                message: "cross-origin write from \(origin) refused: the origin is not configured (--cors-origin) and the request has no credential")
        }
    }

    /// The request's `Origin` when it is not this server's own origin.
    func crossOrigin(_ headers: HTTPFields, host: String?) -> String? {
        guard let origin = headers[.origin]?.lowercased() else { return nil }
        if let host = host?.lowercased(), origin == "http://" + host || origin == "https://" + host { return nil }
        return origin
    }

    func allowsOrigin(_ origin: String) -> Bool {
        self.corsOrigins.contains("*") || self.corsOrigins.contains(origin.lowercased())
    }

    /// CORS headers for a response to a request from a configured origin.
    func corsHeaders(_ request: HTTPFields, host: String?) -> HTTPFields {
        guard let origin = self.crossOrigin(request, host: host), self.allowsOrigin(origin) else { return [:] }
        var headers: HTTPFields = [:]
        headers[.accessControlAllowOrigin] = self.corsOrigins.contains("*") ? "*" : origin
        headers[.vary] = "Origin"
        return headers
    }

    /// The answer to a preflight, nil when the origin is not configured (then 403).
    func preflight(_ request: HTTPFields, host: String?) -> HTTPFields? {
        guard let origin = self.crossOrigin(request, host: host), self.allowsOrigin(origin) else { return nil }
        var headers = self.corsHeaders(request, host: host)
        headers[.accessControlAllowMethods] = "GET, PUT, POST, PATCH, DELETE"
        headers[.accessControlAllowHeaders] = request[.accessControlRequestHeaders] ?? "Authorization, Content-Type"
        headers[.accessControlMaxAge] = "600"
        return headers
    }

    func allowsHost(_ value: String) -> Bool {
        // Most requests name an IPv4 address (127.0.0.1:9000): seen byte by byte, without the
        // copies below (they were 2% of an event loop under small REST writes).
        if Self.isIPv4WithPort(value.utf8) { return true }
        var host = value.lowercased()
        if host.hasPrefix("[") {  // [v6]:port
            return host.contains("]")
        }
        if let colon = host.lastIndex(of: ":") { host = String(host[..<colon]) }
        if host == "localhost" || host.hasSuffix(".localhost") || !host.contains(".") || self.allowedHosts.contains(host) { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil }
    }

    /// `a.b.c.d` or `a.b.c.d:port`: four decimal parts of at most 255 (then digits only).
    static func isIPv4WithPort(_ bytes: String.UTF8View) -> Bool {
        var parts = 0
        var part = -1  // the part's value; -1 before its first digit
        var port = false
        for byte in bytes {
            if port {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return false }
                continue
            }
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                part = max(part, 0) * 10 + Int(byte - UInt8(ascii: "0"))
                guard part <= 255 else { return false }
            case UInt8(ascii: "."), UInt8(ascii: ":"):
                guard part >= 0 else { return false }
                parts += 1
                part = -1
                if byte == UInt8(ascii: ":") {
                    guard parts == 4 else { return false }
                    port = true
                }
            default:
                return false
            }
        }
        if port { return true }
        return part >= 0 && parts == 3
    }
}
