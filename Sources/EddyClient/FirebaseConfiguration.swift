// Firebase's `FirebaseConfiguration` and `FirebaseLoggerLevel` (FirebaseCore), which test and
// app set-up code calls before `FirebaseApp.configure()` (`FirebaseConfiguration.shared
// .setLoggerLevel(.min)`), and `FirebaseVersion()`. The level is kept and read back; Eddy's client
// writes no log of its own at any level (as `Database.setLoggingEnabled(_:)`, accepted and
// without effect).
//
// Thread-safety: the level is behind a mutex.

import Synchronization

/// Firebase's `FIRLoggerLevel`: the values of Apple's system log levels it is defined by.
public enum FirebaseLoggerLevel: Int, Sendable {
    case error = 3
    case warning = 4
    case notice = 5
    case info = 6
    case debug = 7

    /// The least verbose level (`error`).
    public static let min = FirebaseLoggerLevel.error
    /// The most verbose level (`debug`).
    public static let max = FirebaseLoggerLevel.debug
}

public final class FirebaseConfiguration: Sendable {
    public static let shared = FirebaseConfiguration()

    /// Firebase's default is `notice`.
    private let level = Mutex(FirebaseLoggerLevel.notice)

    private init() {}

    public func setLoggerLevel(_ loggerLevel: FirebaseLoggerLevel) {
        self.level.withLock { $0 = loggerLevel }
    }

    public func loggerLevel() -> FirebaseLoggerLevel {
        self.level.withLock { $0 }
    }
}

/// Firebase's `FirebaseVersion()`: the client library's version (`Database.sdkVersion()`).
public func FirebaseVersion() -> String {
    Database.sdkVersion()
}
