// Firebase's `FirebaseApp` (FirebaseCore), so the set-up code of Firebase's guides
// (`FirebaseApp.configure()`, then `Database.database()`) compiles and runs unchanged. An app is
// a name and its options; the only option Eddy uses is `databaseURL`, the database that
// `Database.database(app:)` (and, for the default app, `Database.database()`) opens.
//
// Decisions where Firebase raises an exception Swift cannot catch: configuring a name again
// keeps the first app (and its options); `configure()` without a GoogleService-Info.plist
// configures the default app with no `databaseURL` (`Database.database()`'s default applies).
//
// Thread-safety: the registry is behind a mutex; an app's name and options never change.

import Foundation
import Synchronization

public final class FirebaseApp: NSObject, Sendable {
    static let defaultName = "__FIRAPP_DEFAULT"
    private static let apps = Mutex<[String: FirebaseApp]>([:])

    public let name: String
    private let frozenOptions: FirebaseOptions
    private let dataCollection = Mutex(true)

    private init(name: String, options: FirebaseOptions) {
        self.name = name
        self.frozenOptions = options.copy() as! FirebaseOptions  // the app keeps what it was configured with
        super.init()
    }

    /// A copy of the options the app was configured with.
    public var options: FirebaseOptions { self.frozenOptions.copy() as! FirebaseOptions }

    var databaseURL: String? { self.frozenOptions.databaseURL }

    public var isDataCollectionDefaultEnabled: Bool {
        get { self.dataCollection.withLock { $0 } }
        set { self.dataCollection.withLock { $0 = newValue } }
    }

    /// Configures the default app from GoogleService-Info.plist when there is one.
    public static func configure() {
        self.configure(name: self.defaultName, options: FirebaseOptions.defaultOptions() ?? FirebaseOptions(googleAppID: "eddy", gcmSenderID: ""))
    }

    public static func configure(options: FirebaseOptions) {
        self.configure(name: self.defaultName, options: options)
    }

    public static func configure(name: String, options: FirebaseOptions) {
        self.apps.withLock { apps in
            if apps[name] == nil { apps[name] = FirebaseApp(name: name, options: options) }
        }
    }

    /// The default app, nil until `configure()`.
    @discardableResult
    public static func app() -> FirebaseApp? { self.app(name: self.defaultName) }

    @discardableResult
    public static func app(name: String) -> FirebaseApp? { self.apps.withLock { $0[name] } }

    public static var allApps: [String: FirebaseApp]? {
        let apps = self.apps.withLock { $0 }
        return apps.isEmpty ? nil : apps
    }

    /// Forgets the app; its `Database` instances go offline and are forgotten, as Firebase
    /// disposes of them.
    public func delete(_ completion: @escaping (Bool) -> Void) {
        completion(self.remove())
    }

    /// `delete(_:)` for async code, as Swift derives it from Firebase's completion form.
    @discardableResult
    public func delete() async -> Bool {
        self.remove()
    }

    /// True when this app was registered and is not any more.
    private func remove() -> Bool {
        let removed = Self.apps.withLock { apps -> Bool in
            guard apps[self.name] === self else { return false }
            apps[self.name] = nil
            return true
        }
        if removed { Database.appDeleted(self.name) }
        return removed
    }
}
