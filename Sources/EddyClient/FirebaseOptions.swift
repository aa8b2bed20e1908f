// Firebase's `FirebaseOptions` (FirebaseCore), so app set-up code written for Firebase compiles:
// of its fields only `databaseURL` means anything to Eddy (the URL `Database.database(app:)`
// opens); the others are kept as given. `init?(contentsOfFile:)` reads a GoogleService-Info.plist.

import Foundation

public final class FirebaseOptions: NSObject, NSCopying, @unchecked Sendable {
    // @unchecked: Firebase's options are plain settable properties; set them before
    // `FirebaseApp.configure(options:)`, as Firebase requires.
    public var apiKey: String?
    public var bundleID: String
    public var clientID: String?
    public var gcmSenderID: String
    public var projectID: String?
    public var googleAppID: String
    /// The database `Database.database(app:)` opens: an Eddy URL (`eddy+unix://...`,
    /// `eddy://host:port`, `http://host:port`) or a Firebase one (then `useEmulator`).
    public var databaseURL: String?
    public var storageBucket: String?
    public var appGroupID: String?

    public init(googleAppID: String, gcmSenderID: String) {
        self.googleAppID = googleAppID
        self.gcmSenderID = gcmSenderID
        self.bundleID = Bundle.main.bundleIdentifier ?? ""
        super.init()
    }

    /// Reads a GoogleService-Info.plist (`GOOGLE_APP_ID`, `GCM_SENDER_ID`, `DATABASE_URL`, ...);
    /// nil when the file cannot be read or lacks `GOOGLE_APP_ID`.
    public init?(contentsOfFile plistPath: String) {
        guard let data = FileManager.default.contents(atPath: plistPath),
            let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
            let appID = plist["GOOGLE_APP_ID"] as? String
        else { return nil }
        self.googleAppID = appID
        self.gcmSenderID = plist["GCM_SENDER_ID"] as? String ?? ""
        self.bundleID = plist["BUNDLE_ID"] as? String ?? Bundle.main.bundleIdentifier ?? ""
        self.apiKey = plist["API_KEY"] as? String
        self.clientID = plist["CLIENT_ID"] as? String
        self.projectID = plist["PROJECT_ID"] as? String
        self.databaseURL = plist["DATABASE_URL"] as? String
        self.storageBucket = plist["STORAGE_BUCKET"] as? String
        super.init()
    }

    /// The options of `GoogleService-Info.plist` in the main bundle or the current directory;
    /// without one, options whose `databaseURL` is nil (`Database.database()`'s default then).
    public static func defaultOptions() -> FirebaseOptions? {
        let candidates = [Bundle.main.path(forResource: "GoogleService-Info", ofType: "plist"),
                          FileManager.default.currentDirectoryPath + "/GoogleService-Info.plist"]
        for case let path? in candidates {
            if let options = FirebaseOptions(contentsOfFile: path) { return options }
        }
        return FirebaseOptions(googleAppID: "eddy", gcmSenderID: "")
    }

    public func copy(with zone: NSZone? = nil) -> Any {
        let copy = FirebaseOptions(googleAppID: self.googleAppID, gcmSenderID: self.gcmSenderID)
        copy.apiKey = self.apiKey
        copy.bundleID = self.bundleID
        copy.clientID = self.clientID
        copy.projectID = self.projectID
        copy.databaseURL = self.databaseURL
        copy.storageBucket = self.storageBucket
        copy.appGroupID = self.appGroupID
        return copy
    }
}
