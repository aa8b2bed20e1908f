// An HTTP error answer: status and the Firebase body `{"error": "<message>"}`.
// The mapping from `EddyError` codes to statuses lives here and nowhere else. Internal
// failures never put their details in the body; they are logged instead.

import EddyModel

struct RESTError: Error {
    var status: Int
    var message: String
    /// For logging only; never sent.
    var underlying: EddyError?
    /// The answer ends the connection (`Connection: close`): what follows on it cannot be read
    /// as requests (a refused body still arriving, broken framing, a body over
    /// `--request-bytes-max`).
    var closesConnection = false

    init(status: Int, message: String) {
        self.status = status
        self.message = ErrorMessageBound.bounded(message)
    }

    /// A body over `--request-bytes-max`: 400, as Firebase's REST reference lists "an attempt to
    /// PUT or POST data which is too large" among its 400 conditions (firebase-admin raises
    /// `InvalidArgumentError` for it). The rest of the body may still be arriving, so the
    /// connection ends.
    static func bodyTooLarge(_ message: String) -> RESTError {
        var refusal = RESTError(status: 400, message: message)
        refusal.closesConnection = true
        return refusal
    }

    init(_ error: EddyError) {
        self.underlying = error
        switch error.code {
        case .invalidKey, .invalidPath, .invalidValue, .invalidJSON, .invalidArgument, .limitExceeded, .readOnly,
            .unsupported:
            self.status = 400
            self.message = error.message
        case .notLeader:
            self.status = 403
            self.message = error.message
        case .permissionDenied, .unauthenticated:
            // Firebase answers every denial 401 {"error": "Permission denied"}; firebase-admin
            // turns exactly that into UnauthenticatedError. A bad token says why.
            self.status = 401
            self.message = error.message
        case .notFound:
            self.status = 404
            self.message = error.message
        case .methodNotAllowed:
            self.status = 405
            self.message = error.message
        case .preconditionFailed:
            self.status = 412
            self.message = error.message
        case .busy, .unavailable, .shuttingDown, .inUse:
            self.status = 503
            self.message = error.message
        case .insufficientStorage:
            self.status = 507
            self.message = error.message
        case .corruption, .io, .internal:
            self.status = 500
            self.message = "internal error; the server log has the details"
        default:
            self.status = 500
            self.message = "internal error; the server log has the details"
        }
    }

    var isInternal: Bool { self.status >= 500 && self.status != 503 }
}
