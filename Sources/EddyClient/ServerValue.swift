// Placeholders the server replaces when it applies a write (Firebase's `ServerValue`).

import Foundation

public enum ServerValue {
    /// The server's time of the write, in milliseconds since the Unix epoch.
    @discardableResult
    public static func timestamp() -> [AnyHashable: Any] {
        [".sv": "timestamp"]
    }

    /// The current number at the location plus `delta` (a missing or non-numeric value counts
    /// as 0), applied atomically by the server.
    @discardableResult
    public static func increment(_ delta: NSNumber) -> [AnyHashable: Any] {
        [".sv": ["increment": delta]]
    }
}
