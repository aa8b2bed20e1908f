// A connection busy with a large answer holds no other connection back: a large frame is handled
// on its connection's own queue, not on the event loop that every connection of the process
// shares. (On a loop, a 16 MiB answer parsed by a debug build held every other connection of its
// loop for over 10 s: a LiveResults test elsewhere in the suite then waited 13 s for its first
// value.)

import Dispatch
@testable import EddyClient
import EddyModel
import EddyProtocol
import Foundation
import Testing

@Suite struct ConnectionInboxTests {
    @Test func aConnectionBusyWithAFrameHoldsNoOtherConnectionBack() async throws {
        let daemon = try DaemonProcess()
        try await daemon.start()
        let endpoint = ClientConnection.Endpoint.unix(path: daemon.dataDirectory + "/eddyd.sock")

        // The busy one: the handler of its large answer blocks until released (as a long parse
        // would).
        let busy = ClientConnection(endpoint: endpoint)
        let large = String(repeating: "x", count: ClientConnection.inlineBytesMax)
        let stored = Recorder<Bool>()
        busy.request(.write, .object(["op": .string("set"), "path": .string("/large"), "value": .string(large)])) { result in
            stored.add((try? result.get()) != nil)
        }
        #expect(try await stored.wait(for: 1) == [true])
        let release = DispatchSemaphore(value: 0)
        let entered = Recorder<Bool>()
        busy.request(.get, .object(["path": .string("/large")])) { result in
            entered.add((try? result.get()) != nil)
            release.wait()
        }
        defer { release.signal() }
        #expect(try await entered.wait(for: 1) == [true])

        try await Self.expectOtherConnectionsAnswered(endpoint)

        // Released, the busy connection goes on.
        release.signal()
        let after = Recorder<Value>()
        busy.request(.get, .object(["path": .string("/others/3")])) { result in after.add((try? result.get())?.payload ?? .null) }
        let read = try await after.wait(for: 1)
        #expect(read.first?["value"] == .number(3), "\(read)")
    }

    // A small frame is handled on the loop, but one that took long sends the connection's next
    // frames to its queue (as a burst of writes under an observer makes each answer walk the
    // writes still waiting).
    @Test func aConnectionSlowWithSmallFramesHoldsNoOtherConnectionBack() async throws {
        let daemon = try DaemonProcess()
        try await daemon.start()
        let endpoint = ClientConnection.Endpoint.unix(path: daemon.dataDirectory + "/eddyd.sock")
        let busy = ClientConnection(endpoint: endpoint)
        let release = DispatchSemaphore(value: 0)
        let entered = Recorder<String>()
        // Sent together: the first answer's handler is slow (on the loop), the second's blocks
        // until released, on the queue.
        busy.request(.get, .object(["path": .string("/")])) { _ in
            usleep(UInt32(ClientConnection.inlineMillisecondsMax + 20) * 1000)
            entered.add("slow")
        }
        busy.request(.get, .object(["path": .string("/")])) { _ in
            entered.add("blocked")
            release.wait()
        }
        defer { release.signal() }
        #expect(try await entered.wait(for: 2) == ["slow", "blocked"])

        try await Self.expectOtherConnectionsAnswered(endpoint)
    }

    /// Eight more connections write, and each write must be answered while the busy handler
    /// still blocks: every connection of the process shares the busy one's event loop.
    static func expectOtherConnectionsAnswered(_ endpoint: ClientConnection.Endpoint) async throws {
        let answered = Recorder<String>()
        let others = (0..<8).map { _ in ClientConnection(endpoint: endpoint) }
        for (i, other) in others.enumerated() {
            other.request(.write, .object(["op": .string("set"), "path": .string("/others/\(i)"), "value": .number(Double(i))])) { result in
                answered.add((try? result.get()) != nil ? "\(i)" : "\(i) failed")
            }
        }
        let all = try await answered.wait(for: others.count, seconds: 30)
        #expect(Set(all) == Set((0..<others.count).map { "\($0)" }))
    }
}
