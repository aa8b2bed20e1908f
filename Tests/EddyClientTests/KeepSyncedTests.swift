// `keepSynced(true)` against a real eddyd: the location stays loaded with no observer attached,
// so reads while offline answer from it, as Firebase's "keeping data fresh" guide says;
// `removeAllObservers` leaves it, `keepSynced(false)` ends it. And a one-time read of `.info`
// answers from the client over the native protocol too.

import Dispatch
import EddyClient
import Foundation
import Testing

@Suite(.serialized) struct KeepSyncedTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.client.kept.tests")

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    @Test func aKeptLocationAnswersReadsWhileOffline() async throws {
        let database = Database.database(url: self.daemon.socketURL)
        database.callbackQueue = self.queue
        let scores = database.reference().child("scores")
        try await scores.setValue(["ada": 3, "bob": 5])
        scores.keepSynced(true)
        scores.keepSynced(true)  // not counted
        // Online, a read joins the kept view; when it answers, the view holds the data.
        _ = try await scores.observeSingleEvent(of: .value)
        scores.removeAllObservers()
        database.goOffline()
        let offline = try await scores.getData()
        #expect((offline.value as? [String: Int]) == ["ada": 3, "bob": 5])
        let once = Recorder<UInt>()
        scores.observeSingleEvent(of: .value) { once.add($0.childrenCount) }
        #expect(try await once.wait(for: 1, seconds: 5) == [2])

        scores.keepSynced(false)
        do {
            _ = try await scores.getData()
            Issue.record("a read of what nothing holds fails offline")
        } catch {
            // As Firebase's (FIRDatabaseQueryTests testGetThrowsExceptionNewNodeWhenOffline...).
            #expect((error as NSError).localizedFailureReason == "Client is offline.")
        }
        database.goOnline()
        #expect(try await scores.getData().childrenCount == 2)
    }

    @Test func infoAnswersAOneTimeRead() async throws {
        let database = Database.database(url: self.daemon.socketURL)
        database.callbackQueue = self.queue
        try await database.reference().child("x").setValue(1)  // connected
        let connected = try await database.reference(withPath: ".info/connected").getData()
        #expect(connected.value as? Bool == true)
        #expect(try await database.reference(withPath: ".info/serverTimeOffset").getData().value as? Int == 0)
    }
}
