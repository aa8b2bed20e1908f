// The one place RocksDB's `char** errptr` convention becomes a Swift error.
// RocksDB status strings start with the status kind ("Corruption: ", "IO error: ", ...);
// that prefix becomes `Code`. The C string is freed exactly once, here.

import CRocksDB

public struct RocksDBError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        case corruption, io, invalidArgument, notSupported, busy, incomplete, other
    }
    public let code: Code
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { self.message }

    /// True when the file system is full (ENOSPC).
    public var isNoSpace: Bool {
        self.code == .io && self.message.contains("No space left on device")
    }

    /// True when the message says another process holds the database's LOCK file.
    public var isLockHeld: Bool {
        self.code == .io && (self.message.contains("lock") || self.message.contains("LOCK"))
    }

    /// Calls `body` with an error slot and throws if RocksDB filled it.
    @inline(__always)
    static func check<T>(_ body: (UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> T) throws(RocksDBError) -> T {
        var errptr: UnsafeMutablePointer<CChar>? = nil
        let result = body(&errptr)
        if let errptr {
            let message = String(cString: errptr)
            rocksdb_free(errptr)
            throw RocksDBError(code: code(of: message), message: message)
        }
        return result
    }

    static func code(of message: String) -> Code {
        if message.hasPrefix("Corruption") { return .corruption }
        if message.hasPrefix("IO error") { return .io }
        if message.hasPrefix("Invalid argument") { return .invalidArgument }
        if message.hasPrefix("Not implemented") { return .notSupported }
        if message.hasPrefix("Resource busy") || message.hasPrefix("Operation timed out") { return .busy }
        if message.hasPrefix("Result incomplete") { return .incomplete }
        return .other
    }
}
