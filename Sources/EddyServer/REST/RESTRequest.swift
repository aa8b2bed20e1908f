// A Firebase REST request, parsed and validated before any engine call:
// `<METHOD> /<path>.json?ns=&print=&shallow=&format=`.
//
// Decisions (documented in README):
// - The path must end in `.json` (as Firebase's REST API requires); others are 404.
// - No `ns` selects the namespace `default`.
// - Query parameters (orderBy, startAt, ...) are parsed into a `Query` with Firebase's errors;
//   they are allowed on GET only and not together with shallow=true.
// - `auth`/`access_token` carry a credential and `auth_variable_override` an `auth` for the
//   rules (see `Authenticator`); other unknown parameters are ignored, as Firebase ignores them.
// - `callback=<fn>` (JSONP, GET only): the answer is sent as `fn(<json>);`, `application/javascript`.
//   The name must be a JavaScript identifier or a dotted path of them (at most
//   `callbackBytesMax` bytes), so the answer cannot carry a script of the caller's choosing.
// - `timeout=<n>ms|s|min` (at most 15 min; checked on every method, it limits reads): a GET that
//   takes longer is answered 400 (or, once a long answer has started, its connection ends
//   before the answer is complete). Event streams are not limited by it.
// - `writeSizeLimit=tiny|small|medium|large|unlimited` is checked and otherwise has no effect:
//   Eddy applies every valid write (bounded by --request-bytes-max) whatever its budget.
// - `x-http-method-override=<METHOD>` on a POST selects the method, as the header of that name
//   does (RESTResponder); the header wins when both are sent.
// - `<path>/.priority.json` is the location's priority (GET, PUT, DELETE; see RESTResponder).

import EddyEngine
import EddyModel

struct RESTRequest {
    enum Method: String {
        case get = "GET", put = "PUT", post = "POST", patch = "PATCH", delete = "DELETE"
    }

    enum Print { case normal, pretty, silent }

    var method: Method
    var path: Path
    var namespace: String
    var print: Print = .normal
    var shallow = false
    /// `/.info/...`: read-only server information.
    var isInfo = false
    /// `/.settings/rules.json`: the database's rules document.
    var isRules = false
    /// `/.settings/indexes.json`: the index catalog with build progress (read-only).
    var isIndexes = false
    /// `/.settings/followers.json`: replication status (read-only).
    var isFollowers = false
    /// `/.status.json` (or `/.status`): whether the database takes writes, and why not.
    var isStatus = false
    /// `/.ondisconnect.json` (open an onDisconnect connection) or `/.ondisconnect/<id>.json`
    /// (register on one; `onDisconnectSession` is the id).
    var isOnDisconnect = false
    var onDisconnectSession: String?
    /// An ordered query (`orderBy=...`), nil for a plain read or write.
    var query: Query?
    /// `auth=` or `access_token=`: the credential, when not in the Authorization header.
    var credential: String?
    /// `auth_variable_override=`: the raw JSON.
    var authOverride: String?
    /// `callback=`: the JSONP function the answer is wrapped in.
    var callback: String?
    /// `timeout=`: how long a read may take.
    var timeout: Duration?
    /// `format=export`: objects are never rendered as arrays (Firebase's export format).
    var export = false
    /// `download=<filename>`: a GET answer carries `Content-Disposition: attachment` with this name.
    var download: String?
    /// `<path>/.priority.json`: the location's priority, Firebase's "virtual child" (null when
    /// it has none).
    var isPriority = false

    static let callbackBytesMax = 256
    static let downloadNameBytesMax = 255

    /// A file name that can go in a quoted `Content-Disposition` filename as it is.
    static func isDownloadName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= Self.downloadNameBytesMax else { return false }
        return name.unicodeScalars.allSatisfy { s in
            s.value >= 0x20 && s.value != 0x7F && s != "\"" && s != "\\" && s != "/"
        }
    }
    static let timeoutMax: Duration = .seconds(15 * 60)
    static let writeSizeLimits: Set<String> = ["tiny", "small", "medium", "large", "unlimited"]

    /// Parses the raw (still percent-encoded) path and query.
    init(method: Method, rawPath: String, rawQuery: String?) throws(RESTError) {
        self.method = method
        let rawPath = rawPath == "/.status" ? "/.status.json" : rawPath
        guard rawPath.hasSuffix(".json") else {
            throw RESTError(
                status: 404, message: "not found: \(rawPath); REST paths end in .json, e.g. /users/ada.json")
        }
        let withoutSuffix = rawPath.dropLast(5)
        var keys: [Substring] = []
        for segment in withoutSuffix.split(separator: "/", omittingEmptySubsequences: true) { keys.append(segment) }
        var decoded: [String] = []
        for key in keys {
            do {
                decoded.append(try PercentDecoding.decode(key, what: "path segment"))
            } catch {
                throw RESTError(error)
            }
        }
        if decoded == [".settings", "rules"] {
            self.isRules = true
            decoded = []
        } else if decoded == [".settings", "indexes"] {
            self.isIndexes = true
            decoded = []
        } else if decoded == [".settings", "followers"] {
            self.isFollowers = true
            decoded = []
        } else if decoded.first == ".settings" {
            // Firebase's other database settings (defaultWriteSizeLimit, strictTriggerValidation,
            // which firebase-tools' database:settings sets) are not kept here: refused by name,
            // not as a key with a "." in it.
            let name = decoded.dropFirst().joined(separator: "/")
            throw RESTError(
                status: 400,
                message:
                    "/.settings/\(name) is not a setting eddyd has; it has /.settings/rules.json (the rules document), /.settings/indexes.json (index status) and /.settings/followers.json (replication status)"
            )
        } else if decoded.first == ".ondisconnect", decoded.count <= 2 {
            self.isOnDisconnect = true
            self.onDisconnectSession = decoded.count == 2 ? decoded[1] : nil
            decoded = []
        } else if decoded == [".status"] {
            self.isStatus = true
            decoded = []
        } else if decoded.first == ".info" {
            self.isInfo = true
            decoded.removeFirst()
        } else if decoded.last == ".priority" {
            self.isPriority = true
            decoded.removeLast()
        }
        do throws(EddyError) {
            // The depth first, and the path's text once: a URL of 40,000 segments is refused
            // at once, not after joining all of them for each (quadratic: 100 s of a thread).
            let path = Path(validatedKeys: decoded)
            try path.validateSize()
            for key in decoded {
                do throws(EddyError) {
                    try Key.validate(key)
                } catch {
                    // The path's text only for the message (joining it for every request was a
                    // visible cost under small writes).
                    try Key.validate(key, inPath: "/" + decoded.joined(separator: "/"))
                    throw error
                }
            }
            self.path = path
        } catch {
            throw RESTError(error)
        }
        self.namespace = DataDirectory.defaultNamespace
        var queryParameters = QueryParameters()
        for pair in (rawQuery ?? "").split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name: String
            let value: String
            do {
                name = try PercentDecoding.decode(parts[0], what: "query parameter name")
                value = try PercentDecoding.decode(parts.count > 1 ? parts[1] : "", what: "query parameter \(parts[0])")
            } catch {
                throw RESTError(error)
            }
            switch name {
            case "ns":
                do {
                    try DataDirectory.validateNamespace(value)
                } catch {
                    throw RESTError(error)
                }
                self.namespace = value
            case "auth", "access_token":
                self.credential = value
            case "auth_variable_override":
                self.authOverride = value
            case "print":
                switch value {
                case "pretty": self.print = .pretty
                case "silent": self.print = .silent
                default: throw RESTError(status: 400, message: "print=\(value) is invalid; use print=pretty or print=silent")
                }
            case "shallow":
                switch value {
                case "true": self.shallow = true
                case "false": self.shallow = false
                default: throw RESTError(status: 400, message: "shallow=\(value) is invalid; use shallow=true")
                }
            case "callback":
                guard Self.isCallbackName(value) else {
                    throw RESTError(
                        status: 400,
                        message: "callback=\(value.prefix(64)) is invalid; use a JavaScript function name (letters, digits, _ and $, dotted names allowed, at most \(Self.callbackBytesMax) bytes)"
                    )
                }
                self.callback = value
            case "timeout":
                self.timeout = try Self.parseTimeout(value)
            case "writeSizeLimit":
                guard Self.writeSizeLimits.contains(value) else {
                    throw RESTError(status: 400, message: "writeSizeLimit=\(value.prefix(64)) is invalid; use tiny, small, medium, large or unlimited")
                }
            case "format":
                guard value == "export" || value == "strict" else {
                    throw RESTError(status: 400, message: "format=\(value) is invalid; use format=export (data) or format=strict (rules)")
                }
                self.export = value == "export"
            case "download":
                guard Self.isDownloadName(value) else {
                    throw RESTError(
                        status: 400,
                        message: "download=\(value.prefix(64)) is invalid; use a file name of 1 to \(Self.downloadNameBytesMax) bytes without control characters, quotes, backslashes or slashes"
                    )
                }
                self.download = value
            default:
                if QueryParameters.names.contains(name) {
                    do {
                        try queryParameters.add(name, value)
                    } catch {
                        throw RESTError(error)
                    }
                }
            }
        }
        do {
            self.query = try queryParameters.build()
        } catch {
            throw RESTError(error)
        }
        if self.callback != nil, self.method != .get {
            throw RESTError(status: 400, message: "callback= (JSONP) is only allowed on GET")
        }
        if self.shallow, self.method != .get {
            throw RESTError(status: 400, message: "shallow=true is only allowed on GET")
        }
        if self.query != nil {
            guard self.method == .get else {
                throw RESTError(status: 400, message: "query parameters (orderBy, startAt, ...) are only allowed on GET")
            }
            guard !self.shallow else {
                throw RESTError(status: 400, message: "shallow=true cannot be combined with a query (orderBy)")
            }
        }
    }

    /// A JavaScript identifier (ASCII letters, digits, `_`, `$`; not starting with a digit), or
    /// several joined by `.`.
    static func isCallbackName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.callbackBytesMax else { return false }
        for part in bytes.split(separator: 0x2E, omittingEmptySubsequences: false) {
            guard let first = part.first, !(0x30...0x39).contains(first) else { return false }
            let valid = part.allSatisfy { b in
                (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == 0x5F || b == 0x24
            }
            guard valid else { return false }
        }
        return true
    }

    /// `<n>ms`, `<n>s` or `<n>min`, more than 0 and at most 15 minutes (Firebase's forms).
    static func parseTimeout(_ text: String) throws(RESTError) -> Duration {
        let units: [(suffix: String, milliseconds: Int)] = [("ms", 1), ("min", 60_000), ("s", 1000)]
        for unit in units where text.hasSuffix(unit.suffix) {
            let digits = text.dropLast(unit.suffix.count)
            guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(digits) else { break }
            let duration = Duration.milliseconds(n * unit.milliseconds)
            guard n > 0, duration <= Self.timeoutMax else {
                throw RESTError(status: 400, message: "timeout=\(text) is out of range; it must be more than 0 and at most 15min")
            }
            return duration
        }
        throw RESTError(status: 400, message: "timeout=\(text.prefix(64)) is invalid; use a whole number followed by ms, s or min, e.g. timeout=3s")
    }
}
