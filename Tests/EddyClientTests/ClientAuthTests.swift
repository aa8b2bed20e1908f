// The client with credentials against a secured eddyd (admin secret and HS256 token keys): the
// token set with `setAuthToken` rides on the native connection (an `auth` request, again after
// a reconnect) and on every REST request and SSE stream, and the rules hold the client to it.

import Dispatch
import EddyClient
import EddyTesting
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

@Suite(.serialized) struct ClientAuthTests {
    let daemon: DaemonProcess
    let admin = "client-admin-secret-0123456789"
    let queue = DispatchQueue(label: "eddy.client.auth")

    init() async throws {
        self.daemon = try DaemonProcess()
        try "client-admin-secret-0123456789\n".write(toFile: self.daemon.directory + "/admin", atomically: true, encoding: .utf8)
        try "client-jwt-secret-0123456789-0123456789\n".write(toFile: self.daemon.directory + "/jwt", atomically: true, encoding: .utf8)
        try await self.daemon.start(["--admin-token-file", self.daemon.directory + "/admin", "--jwt-secret-file", self.daemon.directory + "/jwt"])
    }

    func token(_ uid: String) throws -> String {
        let eddy = URL(fileURLWithPath: DaemonProcess.binary).deletingLastPathComponent().appendingPathComponent("eddy")
        let process = try SpawnedProcess(eddy.path, ["token", "--uid", uid, "--secret-file", self.daemon.directory + "/jwt"])
        let output = process.output.readDataToEndOfFile()
        process.wait()
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func setRules(_ document: String = #"{"rules": {"users": {"$uid": {".read": "auth.uid === $uid", ".write": "auth.uid === $uid"}}}}"#) async throws {
        var request = URLRequest(url: URL(string: self.daemon.httpURL + "/.settings/rules.json")!)
        request.httpMethod = "PUT"
        request.setValue("Bearer \(self.admin)", forHTTPHeaderField: "Authorization")
        request.httpBody = Data(document.utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
    }

    @Test(arguments: ["unix", "http"]) func aTokenHoldsTheClientToTheRules(transport: String) async throws {
        try await self.setRules()
        let database = Database.database(url: transport == "unix" ? self.daemon.socketURL : self.daemon.restURL)
        database.callbackQueue = self.queue
        let users = database.reference().child("users")
        // No credential: the secured database refuses.
        await #expect(throws: (any Error).self) { try await users.child("alice").setValue(["name": "Alice"]) }
        database.setAuthToken(try self.token("alice"))
        try await users.child("alice").setValue(["name": "Alice"])
        let snapshot = try await users.child("alice").getData()
        #expect((snapshot.value as? [String: Any])?["name"] as? String == "Alice")
        let denied = await #expect(throws: DatabaseError.self) { try await users.child("bob").setValue(["name": "Mallory"]) }
        #expect(denied?.code == .permissionDenied, "\(String(describing: denied))")
        // As Firebase's SDK reports it: NSError domain com.firebase, code 1, the server's reason.
        let bridged = try #require(denied) as NSError
        #expect(bridged.domain == "com.firebase" && bridged.code == 1, "\(bridged)")
        #expect(bridged.localizedDescription == "Permission denied", "\(bridged.localizedDescription)")
        let canceled = DatabaseError(.writeCanceled, "Write cancelled by user") as NSError
        #expect(canceled.code == 3 && (DatabaseError(.invalidValue, "x") as NSError).code == 9999)
        await #expect(throws: (any Error).self) { _ = try await users.child("bob").getData() }
        database.setAuthToken(self.admin)
        let bob = try await users.child("bob").getData()
        #expect(!bob.exists(), "the denied write left nothing")
    }

    /// A rules change that takes an observer's read away cancels it with permission denied, as
    /// Firebase's SDK does; over HTTP through the stream's `cancel` event (its data null, the
    /// reason in a comment line).
    @Test(arguments: ["unix", "http"]) func aRulesChangeThatTakesTheReadAwayCancelsTheObserver(transport: String) async throws {
        try await self.setRules()
        let database = Database.database(url: transport == "unix" ? self.daemon.socketURL : self.daemon.restURL)
        database.callbackQueue = self.queue
        database.setAuthToken(try self.token("carol"))
        let carol = database.reference().child("users/carol")
        try await carol.setValue(["name": "Carol"])
        let heard = Recorder<String>()
        carol.observe(.value) { snapshot in
            heard.add("value \((snapshot.value as? [String: Any])?["name"] as? String ?? "-")")
        } withCancel: { error in
            heard.add("cancel \((error as? DatabaseError)?.code.rawValue ?? "\(error)")")
        }
        #expect(try await heard.wait(for: 1) == ["value Carol"])
        try await self.setRules(#"{"rules": {"users": {"$uid": {".read": false, ".write": "auth.uid === $uid"}}}}"#)
        let after = try await heard.wait(for: 2, seconds: 10)
        #expect(after == ["value Carol", "cancel permission_denied"], "\(after)")
        try await self.setRules()
    }
}
