// Values larger than a request frame (16 MiB, Firebase's limit for a write from its SDKs):
// eddyd's answers may be up to 1 GiB, so the client reads what a REST write of that size
// stored; and it refuses such a write itself, naming the limit, instead of sending a frame
// eddyd closes the connection for (which it would then send again on every new connection).

import Dispatch
@testable import EddyClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

@Suite(.serialized, .timeLimit(.minutes(2))) struct LargeValueTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.client.large-values")
    /// Just past 16 MiB, in two strings (a string may hold 10 MiB): a debug eddyd and client
    /// parse JSON at a few MB/s, so every byte more costs the suite time.
    let big = ["a": String(repeating: "x", count: (8 << 20) + 4096), "b": String(repeating: "y", count: (8 << 20) + 4096)]

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    @Test func aValueLargerThanARequestIsRead() async throws {
        var request = URLRequest(url: URL(string: self.daemon.httpURL + "/big.json")!)
        request.httpMethod = "PUT"
        request.httpBody = try JSONSerialization.data(withJSONObject: self.big)
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)

        let database = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        // (Events frames go through the same decoder: FrameTests.theBoundIsTheReadersByDirection.)
        let read = try await database.reference(withPath: "big").getData()
        #expect(read.value as? [String: String] == self.big)
        // The connection carries on.
        try await database.reference(withPath: "small").setValue(1)
        #expect(try await database.reference(withPath: "small").getData().value as? Int == 1)
    }

    @Test func aWriteLargerThanARequestFailsAtOnceAndTheConnectionGoesOn() async throws {
        let database = Database.database(url: self.daemon.socketURL + "?ns=writes", callingBackOn: self.queue)
        let refused = await #expect(throws: DatabaseError.self) { try await database.reference(withPath: "w").setValue(self.big) }
        #expect(refused?.code == .invalidValue, "\(String(describing: refused))")
        #expect(refused?.message.contains("16 MiB") == true, "\(String(describing: refused))")
        try await database.reference(withPath: "w").setValue("small")
        #expect(try await database.reference(withPath: "w").getData().value as? String == "small")
        // Nothing of the refused write reached eddyd.
        let (body, _) = try await URLSession.shared.data(from: URL(string: self.daemon.httpURL + "/w.json?ns=writes")!)
        #expect(String(decoding: body, as: UTF8.self) == #""small""#)
    }
}
