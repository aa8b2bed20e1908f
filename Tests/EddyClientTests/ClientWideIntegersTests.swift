// 64-bit integers through Firebase's Apple API against a real eddyd: what `setValue` takes as
// an Int64 (or an NSNumber of one) comes back with every digit in the writer's own events, in
// another client's read (native and REST) and through an increment (FData testLargeNumbers).

import Dispatch
import EddyClient
import Foundation
import Testing

@Suite(.serialized) struct ClientWideIntegersTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.client.wide.tests")

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    @Test func largeIntegersKeepEveryDigit() async throws {
        let writer = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        let ref = writer.reference().child("numbers/large")
        let seen = Recorder<DataSnapshot>()
        let handle = ref.observe(.value) { seen.add($0) }
        _ = try await seen.wait(for: 1)
        let cases: [Any] = [
            NSNumber(value: 9_007_199_254_740_993 as Int64), Int64.max, Int64.min, 1_732_000_000_123_456_789 as Int,
            NSNumber(value: Double.greatestFiniteMagnitude),
        ]
        for (i, number) in cases.enumerated() {
            try await ref.setValue(number)
            let deadline = Date().addingTimeInterval(30)
            while seen.all.count < i + 2, Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
            let local = try #require(seen.all.last?.value as? NSNumber)
            let expected = number as? NSNumber ?? NSNumber(value: number as! Int64)
            // By their digits: NSNumber's `==` takes 2^63 as a Double for Int64.max.
            #expect(local.stringValue == expected.stringValue, "case \(i): \(local)")
            for url in [self.daemon.httpURL, self.daemon.restURL] {
                let reader = Database.database(url: url, callingBackOn: self.queue)
                let read = try await reader.reference().child("numbers/large").getData()
                #expect((read.value as? NSNumber)?.stringValue == expected.stringValue, "case \(i) read over \(url): \(String(describing: read.value))")
            }
        }
        ref.removeObserver(withHandle: handle)
        // Int (64-bit) and Int64 read back exactly.
        try await ref.setValue(9_007_199_254_740_993)
        let reread = try await Database.database(url: self.daemon.httpURL, callingBackOn: self.queue).reference().child("numbers/large").getData()
        #expect(reread.value as? Int == 9_007_199_254_740_993)
        #expect(reread.value as? Int64 == 9_007_199_254_740_993)
    }

    @Test func incrementsOfLargeIntegersAreExact() async throws {
        let database = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        let ref = database.reference().child("numbers/counter")
        try await ref.setValue(9_007_199_254_740_992 as Int64)
        try await ref.setValue(ServerValue.increment(1))
        let read = try await Database.database(url: self.daemon.httpURL, callingBackOn: self.queue).reference().child("numbers/counter").getData()
        #expect(read.value as? Int64 == 9_007_199_254_740_993)
    }

    struct Event: Codable, Equatable {
        var id: Int64
        var nanoseconds: UInt64
        var score: Double
    }

    /// Codable models with 64-bit fields round-trip exactly (`setValue(from:)`, `data(as:)`).
    @Test func codableSixtyFourBitFieldsRoundTrip() async throws {
        let database = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        let ref = database.reference().child("numbers/codable")
        let event = Event(id: 1_234_567_890_123_456_789, nanoseconds: 1_732_000_000_123_456_789, score: 2.5)
        let written = Recorder<String>()
        try ref.setValue(from: event) { error in written.add(error.map { "\($0)" } ?? "ok") }
        #expect(try await written.wait(for: 1) == ["ok"])
        let reader = Database.database(url: self.daemon.restURL, callingBackOn: self.queue)
        let read = try await reader.reference().child("numbers/codable").getData()
        #expect(try read.data(as: Event.self) == event)
    }
}
