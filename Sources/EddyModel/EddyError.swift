// The error type every Eddy layer above storage throws at its public boundary.
// Codes are additive (a private enum behind a struct), so new codes never break callers.
// `message` is for the user: what was wrong, which key/path/limit, what to do. Internals go in
// `underlying` and never reach an HTTP body.

public struct EddyError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidKey, invalidPath, invalidValue, invalidJSON, invalidArgument
            case limitExceeded, notFound, methodNotAllowed, preconditionFailed, readOnly
            case unsupported, inUse, busy, unavailable, shuttingDown, corruption, io, `internal`, notLeader
            case insufficientStorage, permissionDenied, unauthenticated
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A key breaks Firebase's key rules (forbidden character, empty, too long).
        public static let invalidKey = Code(.invalidKey)
        /// A path is malformed, too deep or too long, or conflicts with another path.
        public static let invalidPath = Code(.invalidPath)
        /// A value cannot be stored (non-finite number, bad server value, ...).
        public static let invalidValue = Code(.invalidValue)
        /// A body or parameter is not valid JSON / UTF-8.
        public static let invalidJSON = Code(.invalidJSON)
        /// Any other bad argument (namespace name, query parameter, ...).
        public static let invalidArgument = Code(.invalidArgument)
        /// A size or count limit was exceeded; the message names the limit.
        public static let limitExceeded = Code(.limitExceeded)
        public static let notFound = Code(.notFound)
        /// The security rules do not allow the operation (Firebase's "Permission denied").
        public static let permissionDenied = Code(.permissionDenied)
        /// The credential is invalid: a token that is expired, for another project, badly
        /// signed or unreadable (the message says which).
        public static let unauthenticated = Code(.unauthenticated)
        public static let methodNotAllowed = Code(.methodNotAllowed)
        /// A conditional write (`if-match`) found a different current value.
        public static let preconditionFailed = Code(.preconditionFailed)
        /// A write to a read-only location (`/.info`).
        public static let readOnly = Code(.readOnly)
        public static let unsupported = Code(.unsupported)
        /// A write (or rules change) sent to a follower, which is read-only; the message names
        /// the leader to send it to.
        public static let notLeader = Code(.notLeader)
        /// The data directory is held by another process.
        public static let inUse = Code(.inUse)
        /// A bounded queue is full; retry later. Nothing was applied.
        public static let busy = Code(.busy)
        /// Temporarily unable to answer (an index the query needs is still building); retry.
        /// Nothing was applied.
        public static let unavailable = Code(.unavailable)
        public static let shuttingDown = Code(.shuttingDown)
        /// Stored bytes failed a check; the engine stops accepting writes.
        public static let corruption = Code(.corruption)
        public static let io = Code(.io)
        /// The data volume is full (RocksDB's "No space left on device"): the write was not
        /// applied, and the engine accepts no more writes until it is restarted with space
        /// free; reads keep working. (HTTP 507.)
        public static let insufficientStorage = Code(.insufficientStorage)
        public static let `internal` = Code(.internal)

        public var description: String { self.base.rawValue }
    }

    public var code: Code
    public var message: String
    public var underlying: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        // A message may quote the offending input; it is bounded (ErrorMessageBound).
        self.message = ErrorMessageBound.bounded(message)
        self.underlying = underlying
    }

    public var description: String {
        if let underlying { return "\(self.code): \(self.message) (\(underlying))" }
        return "\(self.code): \(self.message)"
    }
}
