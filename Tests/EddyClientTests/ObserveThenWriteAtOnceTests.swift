// Writes made right after observing (before the server's first batch) raise their child events
// at once, as Firebase's clients do; and the lists-of-data example runs to its end.

import Dispatch
import EddyClient
import EddyTesting
import Foundation
import Testing

@Suite(.serialized) struct ObserveThenWriteAtOnceTests {
    @Test(arguments: [false, true]) func eventsOfWritesMadeRightAfterObservingArrive(freshDatabase: Bool) async throws {
        let daemon = try DaemonProcess()
        try await daemon.start()
        let database = Database.database(url: freshDatabase ? daemon.tcpURL : daemon.socketURL)
        database.callbackQueue = DispatchQueue(label: "eddy.client.at-once")
        let comments = database.reference().child("at-once/comments")
        let log = Recorder<String>()
        comments.observe(.childAdded) { log.add("added \($0.childSnapshot(forPath: "text").value as? String ?? "?")") }
        comments.observe(.childRemoved) { log.add("removed \($0.childSnapshot(forPath: "text").value as? String ?? "?")") }
        let first = comments.childByAutoId()
        try await first.setValue(["text": "first"])
        try await comments.childByAutoId().setValue(["text": "second"])
        try await first.removeValue()
        #expect(try await log.wait(for: 3) == ["added first", "added second", "removed first"])
    }

    @Test func theListsOfDataExampleRuns() async throws {
        let daemon = try DaemonProcess()
        try await daemon.start()
        let binary = URL(fileURLWithPath: DaemonProcess.binary).deletingLastPathComponent().appendingPathComponent("eddy-example-lists")
        let process = try SpawnedProcess(binary.path, [daemon.socketURL])
        let data = process.output.readDataToEndOfFile()
        let status = process.wait()
        let text = String(decoding: data, as: UTF8.self)
        #expect(status == 0, "\(text)")
        #expect(text.contains("comment added") && text.contains("First!") && text.contains("comment removed"), "\(text)")
        #expect(text.contains("most viewed") && text.contains("Hello, Eddy views 110") && text.hasSuffix("done\n"), "\(text)")
    }
}
