// A Database made for several endpoints (a cluster's nodes, `eddy+unix:///a.sock,/b.sock`):
// writes sent to a follower, which refuses them as `notLeader`, go on to the next endpoint and
// succeed there, in order; an endpoint that cannot be reached is skipped. Real eddyd processes:
// a leader and its follower (`eddyd follow`).

import Dispatch
import EddyClient
import Foundation
import Testing

@Suite(.serialized) struct SeveralEndpointsTests {
    let queue = DispatchQueue(label: "eddy.client.endpoints")

    @Test func writesRefusedByAFollowerGoToTheLeaderInOrder() async throws {
        let leader = try DaemonProcess()
        try await leader.start()
        let follower = try DaemonProcess()
        try await follower.start(["--leader", leader.dataDirectory + "/replication.sock"], command: "follow")
        defer {
            follower.stop()
            leader.stop()
        }
        // The follower first: every write is refused there, then sent to the leader.
        let database = Database.database(url: "eddy+unix://\(follower.dataDirectory)/eddyd.sock,\(leader.dataDirectory)/eddyd.sock")
        database.callbackQueue = self.queue
        let list = database.reference().child("several/list")
        let outcomes = Recorder<String>()
        for index in 0..<20 {
            list.child(String(format: "k%02d", index)).setValue(index) { error, _ in outcomes.add(error.map { "\($0)" } ?? "ok") }
        }
        let results = try await outcomes.wait(for: 20)
        #expect(results.allSatisfy { $0 == "ok" }, "\(results.filter { $0 != "ok" })")
        // On the leader, in the order written (the last write of a key wins, and each key once).
        let direct = Database.database(url: leader.socketURL)
        direct.callbackQueue = self.queue
        let stored = try #require(try await direct.reference().child("several/list").getData().value as? [String: Int])
        #expect(stored.count == 20)
        #expect(stored["k07"] == 7)
    }

    @Test func anEndpointThatCannotBeReachedIsSkipped() async throws {
        let leader = try DaemonProcess()
        try await leader.start()
        defer { leader.stop() }
        let database = Database.database(url: "eddy+unix://\(leader.directory)/nobody-listens.sock,\(leader.dataDirectory)/eddyd.sock")
        database.callbackQueue = self.queue
        let ref = database.reference().child("skipped")
        _ = try await ref.setValue("here")
        #expect(try await ref.getData().value as? String == "here")
    }
}
