// Two clients write one location at the same moment: the server commits one after the other,
// and each client's observers must end at the server's result. A client whose own write was
// still waiting for its answer when the other client's later write arrived shows its own
// value over it until the answer, then the other's (as Firebase's clients do when the write is
// acknowledged), never its own for good. Over the native socket and over HTTP.

import Dispatch
import EddyClient
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.serialized) struct ConcurrentWritersTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.concurrent-writers.tests")

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    private func url(_ transport: String) -> String {
        transport == "http" ? self.daemon.httpURL + "/?ns=race-\(transport)&transport=rest" : self.daemon.socketURL + "?ns=race-\(transport)"
    }

    /// A client of its own (its own app, so its own connection).
    private func client(_ transport: String, _ name: String) -> Database {
        let appName = "\(name)-\(transport)"
        let app = FirebaseApp.app(name: appName) ?? {
            FirebaseApp.configure(name: appName, options: FirebaseOptions(googleAppID: "1:1:ios:1", gcmSenderID: "1"))
            return FirebaseApp.app(name: appName)!
        }()
        let database = Database.database(app: app, url: self.url(transport))
        database.callbackQueue = self.queue
        return database
    }

    /// What the server holds at `path`, read over REST (no client cache in between).
    private func serverValue(_ transport: String, _ path: String) async throws -> String {
        let (body, _) = try await URLSession.shared.data(from: URL(string: self.daemon.httpURL + "/\(path).json?ns=race-\(transport)")!)
        return String(decoding: body, as: UTF8.self)
    }

    @Test(arguments: ["socket", "http"]) func observersOfBothWritersEndWhereTheServerDid(transport: String) async throws {
        let (first, second) = (self.client(transport, "first"), self.client(transport, "second"))
        let firstSeen = Recorder<String>()
        let secondSeen = Recorder<String>()
        first.reference(withPath: "race/k").observe(.value) { firstSeen.add("\($0.value ?? "nil")") }
        second.reference(withPath: "race/k").observe(.value) { secondSeen.add("\($0.value ?? "nil")") }
        // A second view of the first client over the same location (over HTTP its own stream,
        // which may pass the writes at another time than the first view's).
        let parentSeen = Recorder<String>()
        first.reference(withPath: "race").observe(.value) { parentSeen.add("\($0.childSnapshot(forPath: "k").value ?? "nil")") }
        _ = try await firstSeen.wait(for: 1)
        _ = try await secondSeen.wait(for: 1)
        _ = try await parentSeen.wait(for: 1)
        for round in 0..<30 {
            async let a: DatabaseReference = first.reference(withPath: "race/k").setValue("first-\(round)")
            async let b: DatabaseReference = second.reference(withPath: "race/k").setValue("second-\(round)")
            _ = try await (a, b)
            let server = try await self.serverValue(transport, "race/k")
            let expected = server.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            #expect(expected.hasSuffix("-\(round)"), "the server holds one of this round's writes: \(server)")
            for (name, seen) in [("first", firstSeen), ("second", secondSeen), ("first's parent view", parentSeen)] {
                let deadline = Date().addingTimeInterval(60)
                while seen.all.last != expected, Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
                #expect(seen.all.last == expected, "round \(round): the \(name) client shows \(seen.all.last ?? "nothing"), the server holds \(expected)")
            }
        }
        // Instances are kept per URL for the process: once this suite's eddyd is gone, they must
        // not reconnect to another suite's eddyd that reuses its port.
        first.goOffline()
        second.goOffline()
    }
}
