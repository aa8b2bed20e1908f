// Firebase's `.value` wrapper and `.priority` keys in data a client writes, against a real
// eddyd: the client's own view holds from the first event what the server answers (the wrapper
// unwrapped, no priorities), in writes and in transactions; the server stores the priorities
// (`setValue(_:andPriority:)`, `setPriority`, `.priority` keys), which `format=export` reads.

import Dispatch
import EddyClient
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.serialized) struct FirebaseFormsTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.client.forms.tests")

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    @Test func theLocalViewAndTheServerHoldTheUnwrappedValue() async throws {
        let database = Database.database(url: self.daemon.socketURL)
        database.callbackQueue = self.queue
        let ref = database.reference().child("forms/ada")
        let seen = Recorder<String>()
        ref.observe(.value) { snapshot in
            let data = (try? JSONSerialization.data(withJSONObject: snapshot.value ?? NSNull(), options: [.sortedKeys, .fragmentsAllowed]))
            seen.add(data.map { String(decoding: $0, as: UTF8.self) } ?? "?")
        }
        #expect(try await seen.wait(for: 1) == ["null"])
        // Not awaited: the next event is the client's own view, before the server answers.
        let written = Recorder<String>()
        ref.setValue(["name": [".value": "Ada", ".priority": 1], "born": [".value": 1815], ".priority": NSNull()]) { error, _ in
            written.add(error.map { "\($0)" } ?? "ok")
        }
        let events = try await seen.wait(for: 2)
        #expect(events[1] == #"{"born":1815,"name":"Ada"}"#, "every event: \(events)")
        #expect(try await written.wait(for: 1) == ["ok"])
        #expect(seen.all.allSatisfy { !$0.contains(".value") && !$0.contains(".priority") }, "\(seen.all)")

        let other = Database.database(url: self.daemon.restURL)
        other.callbackQueue = self.queue
        let stored = try #require(try await other.reference().child("forms/ada").getData().value as? [String: Any])
        #expect(stored["name"] as? String == "Ada" && stored["born"] as? Int == 1815 && stored.count == 2)

        let result = try await ref.child("count").runTransactionBlock { data in
            data.value = [".value": 7]
            return .success(withValue: data)
        }
        #expect(result.0 && result.1.value as? Int == 7)
    }

    /// Firebase's "Read and Write Data" completion-block forms, typed closure parameters and all,
    /// written inside an async function (where Swift prefers async overloads): they must choose
    /// the completion-block methods, not the async `andPriority:` forms with the block taken for a
    /// priority (which did not compile). Priorities still go to the async form.
    @Test func completionBlockFormsCompileAndRunInsideAnAsyncFunction() async throws {
        let database = Database.database(url: self.daemon.socketURL)
        database.callbackQueue = self.queue
        let ref = database.reference().child("forms/blocks")
        let answers = Recorder<String>()
        ref.child("users/u1").setValue(["username": "ada"]) { (error: Error?, ref: DatabaseReference) in
            answers.add(error == nil ? "set \(ref.key ?? "")" : "set failed: \(error!)")
        }
        ref.child("presence").onDisconnectSetValue("offline") { (error: Error?, ref: DatabaseReference) in
            answers.add(error == nil ? "onDisconnect \(ref.key ?? "")" : "onDisconnect failed: \(error!)")
        }
        #expect(try await answers.wait(for: 2).sorted() == ["onDisconnect presence", "set u1"])
        try await ref.child("ranked").setValue("first", andPriority: 1)
        try await ref.child("presence").onDisconnectSetValue("gone", andPriority: "p")
        let stored = try #require(try await ref.getData().value as? [String: Any])
        #expect((stored["users"] as? [String: Any])?["u1"] as? [String: String] == ["username": "ada"])
        #expect(stored["ranked"] as? String == "first")
    }

    /// Priorities a client writes are stored: `setValue(_:andPriority:)`, `setPriority` (nil
    /// removes; an empty location keeps none), `.priority` keys in a value and in an update, and
    /// at disconnect; its own view holds the data without them. Both transports.
    @Test(arguments: ["native", "rest"]) func prioritiesAClientWritesAreStored(transport: String) async throws {
        let database = Database.database(url: transport == "native" ? self.daemon.socketURL : self.daemon.restURL)
        database.callbackQueue = self.queue
        let ref = database.reference().child("forms/priorities-\(transport)")
        try await ref.child("a").setValue("first", andPriority: 1)
        try await ref.child("b").setValue(["x": 1], andPriority: "p")
        try await ref.child("c").setValue(["y": [".value": 2, ".priority": 3.5], ".priority": 4])
        try await ref.child("d").setValue(true)
        try await ref.child("d").setPriority(5)
        try await ref.child("b").setPriority(nil)
        if transport == "native" {
            // Firebase fails it (FData testSetPriorityOnNonexistentNodeFails); REST cannot tell.
            await #expect(throws: DatabaseError.self) { try await ref.child("missing").setPriority(6) }
        } else {
            try await ref.child("missing").setPriority(6)
        }
        try await ref.updateChildValues(["c/y/.priority": "q"])
        let exported = try await self.exportJSON("forms/priorities-\(transport)")
        #expect(
            exported == #"{"a":{".priority":1,".value":"first"},"b":{"x":1},"c":{".priority":4,"y":{".priority":"q",".value":2}},"d":{".priority":5,".value":true}}"#)
        // A read of a priority query is selected by the stored priorities (none first, then
        // numbers, then strings).
        let lowest = try await ref.queryOrderedByPriority().queryLimited(toFirst: 1).getData()
        #expect(lowest.children.compactMap { ($0 as? DataSnapshot)?.key } == ["b"], "\(lowest)")
        // A live view of it too, its children in priority order (REST streams it with
        // format=export).
        let observed = Recorder<[String]>()
        let handle = ref.queryOrderedByPriority().queryLimited(toFirst: 2).observe(.value) { snapshot in
            observed.add(snapshot.children.compactMap { ($0 as? DataSnapshot)?.key })
        }
        #expect(try await observed.wait(for: 1) == [["b", "a"]])
        try await ref.child("c").setPriority(0)
        #expect(try await observed.wait(for: 2).last == ["b", "c"], "c's new priority moves it in, a out")
        ref.removeObserver(withHandle: handle)
        try await ref.child("c").setPriority(4)
        let fromTwo = try await ref.queryOrderedByPriority().queryStarting(atValue: 2).getData()
        #expect(Set(fromTwo.children.compactMap { ($0 as? DataSnapshot)?.key }) == ["c", "d"], "\(fromTwo)")
        let view = try #require(try await ref.getData().value as? [String: Any])
        #expect(view["a"] as? String == "first" && (view["c"] as? [String: Any])?["y"] as? Int == 2, "\(view)")
        do {
            try await ref.child("a").setPriority(true)
            Issue.record("a boolean is no priority")
        } catch let error as DatabaseError {
            #expect(error.code == .invalidValue && error.message.contains("priority"), "\(error)")
        }
        do {
            try await ref.child("a").setValue("v", andPriority: ["k": 1])
            Issue.record("an object is no priority")
        } catch let error as DatabaseError {
            #expect(error.code == .invalidValue && error.message.contains("priority"), "\(error)")
        }
        #expect(try await self.exportJSON("forms/priorities-\(transport)/a") == #"{".priority":1,".value":"first"}"#, "nothing of a refused write")
    }

    /// GET `<path>.json?format=export` from eddyd itself.
    private func exportJSON(_ path: String) async throws -> String {
        let (body, _) = try await URLSession.shared.data(from: URL(string: self.daemon.httpURL + "/" + path + ".json?format=export")!)
        return String(decoding: body, as: UTF8.self)
    }

    /// FData.m testSettingInvalidObjectsThrow: a `.value` wrapper holds a leaf; an object in it
    /// is refused naming its path, and nothing is written.
    @Test func aWrappedObjectIsRefused() async throws {
        let database = Database.database(url: self.daemon.socketURL)
        database.callbackQueue = self.queue
        let ref = database.reference().child("forms/wrapped")
        for value in [[".value": [String: Any]()], ["a": [".value": ["x": 1]]] as [String: Any]] {
            do {
                try await ref.setValue(value)
                Issue.record("\(value) must be refused")
            } catch let error as DatabaseError {
                #expect(error.code == .invalidValue && error.message.contains("used with .value at /forms/wrapped"), "\(error)")
            }
        }
        #expect(try await ref.getData().exists() == false)
    }

    /// FData.m testSetWithCircularReferenceFails: a dictionary that holds itself is refused
    /// (Firebase: "Max object depth exceeded"), not followed until the stack runs out.
    @Test func aValueThatHoldsItselfIsRefused() async throws {
        let database = Database.database(url: self.daemon.socketURL)
        database.callbackQueue = self.queue
        let ref = database.reference().child("forms/circular")
        let outer = NSMutableDictionary()
        outer["lol"] = ["foo": "bar", "circular": outer] as NSDictionary
        do {
            try await ref.setValue(outer)
            Issue.record("a circular value must be refused")
        } catch let error as DatabaseError {
            #expect(error.code == .invalidValue && error.message.contains("Max object depth exceeded"), "\(error)")
        }
        outer.removeObject(forKey: "lol")  // break the cycle so the dictionary can be freed
        #expect(try await ref.getData().exists() == false)
    }

    /// FData.m testAccessingInvalidPathsThrows: in `reference(fromURL:)` only a `?` ends the
    /// path (Firebase's URL parser), so `ha#sh` is an invalid key, refused, and never the
    /// location `ha`.
    @Test func aHashInAURLsPathIsPartOfItsKey() async throws {
        let database = Database.database(url: self.daemon.socketURL)
        database.callbackQueue = self.queue
        let ref = database.reference(fromURL: self.daemon.socketURL + "/forms/ha#sh")
        do {
            try await ref.setValue("x")
            Issue.record("a key with # must be refused, not written at \(ref.url)")
        } catch let error as DatabaseError {
            #expect(error.code == .invalidValue || error.code == .invalidQuery, "\(error)")
        }
        #expect(try await database.reference().child("forms/ha").getData().exists() == false)
        #expect(database.reference(fromURL: self.daemon.socketURL + "/forms/x?ns=default").url.hasSuffix("/forms/x"))
    }

    /// FDotInfo testCantWriteToInfo: writes under `.info` fail with Firebase's message (its
    /// SDK raises it at the call), and `.info/connected` is left as it was.
    @Test func writesUnderInfoAreRefused() async throws {
        let database = Database.database(url: self.daemon.socketURL)
        database.callbackQueue = self.queue
        let info = database.reference().child(".info")
        try await database.reference().child("forms/warm").setValue(true)  // connected
        let outcomes = Recorder<String>()
        info.child("connected").setValue(false) { error, _ in outcomes.add("\(error.map { "\($0.localizedDescription)" } ?? "nil")") }
        info.updateChildValues(["connected": false]) { error, _ in outcomes.add("\(error.map { "\($0.localizedDescription)" } ?? "nil")") }
        info.child("serverTimeOffset").removeValue { error, _ in outcomes.add("\(error.map { "\($0.localizedDescription)" } ?? "nil")") }
        let all = try await outcomes.wait(for: 3)
        #expect(
            all.sorted() == [
                "(removeValue) failed to path /.info/serverTimeOffset: Can't modify data under .info",
                "(setValue:) failed to path /.info/connected: Can't modify data under .info",
                "(updateChildValues:) failed to path /.info: Can't modify data under .info",
            ], "\(all)")
        #expect(try await info.child("connected").getData().value as? Bool == true)
    }
}

