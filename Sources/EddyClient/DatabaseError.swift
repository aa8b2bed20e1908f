// The errors the client hands to completion blocks, cancel blocks and `async throws` calls.
// Codes follow Firebase's (`FIRDatabaseErrorDomain`, the REST error names); the message says
// what the server said or what the client refused. Never a crash: bad arguments that Firebase
// rejects with an exception at the call are the only traps (see `DatabaseQuery`).
//
// As an `NSError` (`error as NSError`, `localizedDescription`) it is what Firebase's SDK makes
// (FUtilities `errorForStatus:andReason:`): domain "com.firebase", code 1 for permission_denied,
// 3 for write_canceled and 9999 for anything else, and the message alone as its description.
// `description` keeps the code in front, for logs.

import EddyModel
import Foundation

public struct DatabaseError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError, CustomNSError {
    public enum Code: String, Sendable {
        /// The server refused the operation (security rules, a follower refusing writes).
        case permissionDenied = "permission_denied"
        /// The query or the value is not valid (a key, a path, a limit).
        case invalidQuery = "invalid_query"
        case invalidValue = "invalid_value"
        /// The connection is gone; the operation may or may not have been applied.
        case disconnected
        /// A write that was queued and then dropped (`purgeOutstandingWrites`, `goOffline`).
        case writeCanceled = "write_canceled"
        /// A transaction whose value kept changing (more than `maxRetries` conflicts), or a
        /// conditional write that lost.
        case dataStale = "datastale"
        case maxRetries = "maxretry"
        /// A transaction overridden by a `setValue`, `updateChildValues` or `removeValue` of the
        /// same client at, above or below its location before it was written (Firebase's "set").
        case overriddenBySet = "set"
        /// The data volume is full (HTTP 507): writes resume by themselves once space is freed.
        case insufficientStorage = "insufficient_storage"
        /// Anything else the server reported; the message says what.
        case unknownError = "unknown_error"
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(self.code.rawValue): \(self.message)" }
    public var errorDescription: String? { self.message }

    public static var errorDomain: String { "com.firebase" }

    /// Firebase's codes: permission_denied 1, unavailable 2, write_canceled 3, any other 9999.
    public var errorCode: Int {
        switch self.code {
        case .permissionDenied: return 1
        case .writeCanceled: return 3
        default: return 9999
        }
    }

    /// The message as the description; for `disconnected`, Firebase's failure reason for a
    /// read made offline (`kPersistentConnectionOffline`, "Client is offline.") too.
    public var errorUserInfo: [String: Any] {
        guard self.code == .disconnected else { return [NSLocalizedDescriptionKey: self.message] }
        return [NSLocalizedDescriptionKey: self.message, NSLocalizedFailureReasonErrorKey: Self.clientOfflineReason]
    }

    static let clientOfflineReason = "Client is offline."

    /// From a server `error` frame (`{"code": ..., "message": ...}`).
    init(serverCode: String, message: String) {
        switch serverCode {
        case "permissionDenied", "notLeader", "readOnly": self.init(.permissionDenied, message)
        case "invalidArgument": self.init(.invalidQuery, message)
        case "invalidValue", "invalidJSON", "invalidPath", "invalidKey", "limitExceeded": self.init(.invalidValue, message)
        case "preconditionFailed": self.init(.dataStale, message)
        case "insufficientStorage": self.init(.insufficientStorage, message)
        default: self.init(.unknownError, "\(serverCode): \(message)")
        }
    }

    init(_ error: EddyError) {
        self.init(serverCode: error.code.description, message: error.message)
    }
}
