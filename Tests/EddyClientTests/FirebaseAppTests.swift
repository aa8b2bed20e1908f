// Firebase's app set-up and the inherited initializers compile and work with `import EddyClient`
// (as in Firebase's own API test, FirebaseDatabase/Tests/Unit/Swift/DatabaseAPITests.swift):
// `FirebaseApp.configure(name:options:)`, `Database.database(app:)` opening the options'
// `databaseURL`, `database.app`, `DatabaseReference()`, `DataSnapshot()`, `MutableData()`,
// `TransactionResult()` and `description()`; Firebase's module names import the same types.

import EddyClient
import FirebaseCore
import FirebaseDatabase
import Foundation
import Testing

@Suite(.serialized) struct FirebaseAppTests {
    @Test func anAppOpensTheDatabaseOfItsOptions() throws {
        #expect(FirebaseCore.FirebaseApp.self == EddyClient.FirebaseApp.self)
        #expect(FirebaseDatabase.Database.self == EddyClient.Database.self)
        let options = FirebaseOptions(googleAppID: "1:123:ios:abc", gcmSenderID: "123")
        options.databaseURL = "eddy+unix:///tmp/eddy-app-test-\(UUID().uuidString)/eddyd.sock"
        let name = "app-\(UUID().uuidString)"
        FirebaseApp.configure(name: name, options: options)
        let app = try #require(FirebaseApp.app(name: name))
        #expect(app.name == name && app.options.databaseURL == options.databaseURL)
        // Options are copied: changing them later changes nothing of the app.
        options.databaseURL = "eddy+unix:///elsewhere.sock"
        #expect(app.options.databaseURL != options.databaseURL)
        let database = Database.database(app: app)
        #expect(database.reference().url == app.options.databaseURL)
        #expect(database.app === app)
        #expect(Database.database(url: "eddy+unix:///tmp/never-an-app.sock").app == nil)
        // Configuring a name again keeps the first app; deleting forgets it.
        FirebaseApp.configure(name: name, options: FirebaseOptions(googleAppID: "other", gcmSenderID: ""))
        #expect(FirebaseApp.app(name: name) === app && FirebaseApp.allApps?[name] === app)
        let deleted = Recorder<Bool>()
        app.delete { deleted.add($0) }
        #expect(deleted.all == [true] && FirebaseApp.app(name: name) == nil)
    }

    // FIRDatabaseTests testDifferentInstanceForAppWithURL: a trailing slash names the same database.
    @Test func aTrailingSlashNamesTheSameInstance() {
        let host = "http://127.0.0.1:1/?ns=slash-\(UUID().uuidString)"
        #expect(Database.database(url: host) === Database.database(url: host.replacingOccurrences(of: "/?", with: "?")))
        #expect(Database.database(url: "http://127.0.0.1:2/") === Database.database(url: "http://127.0.0.1:2"))
        #expect(Database.database(url: "http://127.0.0.1:3") !== Database.database(url: "http://127.0.0.1:4"))
    }

    @Test func inheritedInitializersAndDescriptionCompileAndMeanSomething() {
        let snapshot = DataSnapshot()
        #expect(!snapshot.exists() && snapshot.value is NSNull)
        let data = MutableData()
        #expect(data.value is NSNull)
        let reference = DatabaseReference()
        #expect(reference.key == nil && reference.url == Database.database().reference().url)
        #expect(DatabaseQuery().ref.url == reference.url)
        #expect(reference.child("a/b").description() == reference.child("a/b").url)
        #expect(reference.child("a").description == reference.child("a").url)
        // TransactionResult() writes nothing: DatabaseClientTests runs one.
        _ = TransactionResult()
    }

    @Test func anEmptyUpdateSucceedsWithoutAskingTheServer() async throws {
        // No daemon at this socket: a write would wait for the connection; Firebase's empty
        // update is done at once.
        let database = Database.database(url: "eddy+unix:///tmp/eddy-no-daemon-\(UUID().uuidString)/eddyd.sock")
        let ref = database.reference().child("a")
        let done = Recorder<String>()
        ref.updateChildValues([:]) { error, _ in done.add(error.map { "\($0)" } ?? "ok") }
        #expect(try await done.wait(for: 1, seconds: 5) == ["ok"])
        #expect(try await ref.updateChildValues([:]) === ref)
    }

    @Test func configurationVersionAndAsyncDelete() async throws {
        #expect(FirebaseConfiguration.shared.loggerLevel() == .notice, "Firebase's default level")
        FirebaseConfiguration.shared.setLoggerLevel(.min)
        #expect(FirebaseConfiguration.shared.loggerLevel() == .error)
        FirebaseConfiguration.shared.setLoggerLevel(.max)
        #expect(FirebaseConfiguration.shared.loggerLevel() == FirebaseLoggerLevel.debug)
        FirebaseConfiguration.shared.setLoggerLevel(.notice)
        #expect(FirebaseLoggerLevel.min.rawValue == 3 && FirebaseLoggerLevel.max.rawValue == 7)
        #expect(FirebaseVersion() == Database.sdkVersion())

        let name = "app-\(UUID().uuidString)"
        FirebaseApp.configure(name: name, options: FirebaseOptions(googleAppID: "1:1:ios:1", gcmSenderID: "1"))
        let app = try #require(FirebaseApp.app(name: name))
        #expect(await app.delete())
        #expect(FirebaseApp.app(name: name) == nil)
        #expect(await app.delete() == false, "a deleted app is not deleted again")
    }
}
