// Firebase's onDisconnect against a real eddyd, over the native protocol and over HTTP (the
// emulator set-up, where they go on eddyd's onDisconnect connection): writes a client registers
// run when its connection ends (here `goOffline()`), as one change in Firebase's model, seen by
// another client; cancelled ones do not run, nor the cancelled part of one above; a bad value is refused at registration; `.info/connected` turns true again
// after `goOnline()`, so presence code registers again.

import Dispatch
import EddyClient
import Foundation
import Testing

@Suite(.serialized) struct PresenceTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.client.presence.tests")

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start(["--log-level", "debug"])
    }

    private func database(_ url: String) -> Database { Database.database(url: url, callingBackOn: self.queue) }

    /// The user's URL: the native socket, eddyd's HTTP listener over REST and SSE, or the native
    /// protocol on eddyd's HTTP port (what an `http://` URL alone takes).
    private func userURL(_ transport: String) -> String {
        switch transport {
        case "http": return self.daemon.restURL
        case "http-port": return self.daemon.httpURL
        default: return self.daemon.socketURL
        }
    }

    @Test(arguments: ["native", "http", "http-port"])
    func writesRegisteredForDisconnectRunWhenTheConnectionEnds(transport: String) async throws {
        let watcher = self.database(self.daemon.tcpURL)
        let user = self.database(self.userURL(transport))
        let me = user.reference().child("presence/ada-\(transport)")
        try await me.setValue(["status": "online", "session": "s1", "info": ["n": 1, "device": "phone"], "kept": "yes", "gone": "x"])

        #expect(try await me.child("status").onDisconnectSetValue("offline").key == "status")
        try await me.child("session").onDisconnectRemoveValue()
        // A set of nil removes, as Firebase's does (eddyd refuses a set without a value).
        try await me.child("gone").onDisconnectSetValue(nil)
        try await me.child("info").onDisconnectUpdateChildValues(["n": 2, "lastSeen": ServerValue.timestamp()])
        try await me.child("kept").onDisconnectSetValue("changed")
        try await me.child("kept").cancelDisconnectOperations()
        let refused = Recorder<String>()
        me.child("bad").onDisconnectSetValue(["a.b": 1]) { error, _ in refused.add(error.map { "\($0)" } ?? "nil") }
        #expect(try await refused.wait(for: 1).first?.contains("a.b") == true)
        // Registered, not run: nothing changed yet.
        #expect(try await watcher.reference().child("presence/ada-\(transport)/status").getData().value as? String == "online")

        let seen = Recorder<String>()
        watcher.reference().child("presence/ada-\(transport)/status").observe(.value) { seen.add($0.value as? String ?? "none") }
        #expect(try await seen.wait(for: 1) == ["online"])
        user.goOffline()
        #expect(try await seen.wait(for: 2, explain: { "eddyd's log: " + self.daemon.logTail(containing: ["connection closed", "onDisconnect writes"]) + "; eddyd holds " + (await self.daemon.serverJSON("presence/ada-\(transport)")) }) == ["online", "offline"])
        // The writes run as one change: once "status" is seen, the rest is there too.
        let after = try #require(try await watcher.reference().child("presence/ada-\(transport)").getData().value as? [String: Any])
        #expect(after["session"] == nil && after["gone"] == nil)
        #expect(after["kept"] as? String == "yes", "a cancelled write does not run")
        let info = try #require(after["info"] as? [String: Any])
        #expect(info["n"] as? Int == 2 && info["device"] as? String == "phone")
        let lastSeen = try #require(info["lastSeen"] as? Double)
        #expect(abs(lastSeen / 1000 - Date().timeIntervalSince1970) < 60)
        #expect(after["bad"] == nil)
        user.goOnline()
    }

    /// Firebase's testOnDisconnectTriggersSingleLocalValueEventForReader: a set, an update and a
    /// remove registered by one connection run as one change, so another client's observer
    /// hears one value event with all three applied.
    @Test(arguments: ["native", "http"])
    func aConnectionsWritesRunAsOneChange(transport: String) async throws {
        let watcher = self.database(self.daemon.tcpURL)
        let user = self.database(self.userURL(transport))
        let node = user.reference().child("single/\(transport)")
        try await node.child("foo").onDisconnectSetValue(["bar": "a", "baz": "b"])
        try await node.child("foo").onDisconnectUpdateChildValues(["bam": "c"])
        try await node.child("foo/baz").onDisconnectRemoveValue()
        let seen = Recorder<String>()
        watcher.reference().child("single/\(transport)").observe(.value) { snapshot in
            seen.add(snapshot.exists() ? String(decoding: try! JSONSerialization.data(withJSONObject: snapshot.value!, options: .sortedKeys), as: UTF8.self) : "null")
        }
        #expect(try await seen.wait(for: 1) == ["null"])
        user.goOffline()
        #expect(try await seen.wait(for: 2) == ["null", #"{"foo":{"bam":"c","bar":"a"}}"#])
        try await Task.sleep(for: .milliseconds(300))
        #expect(seen.all.count == 2, "one event: \(seen.all)")
        user.goOnline()
    }

    /// Firebase's testOnDisconnectTriggersSingleLocalValueEventForWriterWithQuery: the writer's
    /// own observer of a query the server evaluates (limitToLast 2) shows the writes once the
    /// connection ends, with the query evaluated on its window, in one event and while offline.
    @Test(arguments: ["native", "http"])
    func theWritersQueryObserverShowsItsOnDisconnectWrites(transport: String) async throws {
        let user = self.database(self.userURL(transport))
        let foo = user.reference().child("single-query/\(transport)/foo")
        let seen = Recorder<[String: String]>()
        foo.queryLimited(toLast: 2).observe(.value) { seen.add($0.value as? [String: String] ?? [:]) }
        #expect(try await seen.wait(for: 1) == [[:]])
        try await foo.onDisconnectSetValue(["bar": "a", "baz": "b"])
        try await foo.onDisconnectUpdateChildValues(["bam": "c"])
        try await foo.child("baz").onDisconnectRemoveValue()
        user.goOffline()
        #expect(try await seen.wait(for: 2) == [[:], ["bar": "a", "bam": "c"]])
        try await Task.sleep(for: .milliseconds(300))
        #expect(seen.all.count == 2, "one event: \(seen.all)")
        user.goOnline()
    }

    /// Firebase's testOnDisconnectCancelWorks: a cancel at foo/baz forgets that child of an
    /// update registered at foo; its other child still runs.
    @Test(arguments: ["native", "http"])
    func aCancelBelowAnUpdateForgetsThatChildOnly(transport: String) async throws {
        let watcher = self.database(self.daemon.tcpURL)
        let user = self.database(self.userURL(transport))
        let foo = user.reference().child("cancel-below/\(transport)/foo")
        try await foo.setValue(["bar": "a", "baz": "b"])
        try await foo.onDisconnectUpdateChildValues(["baz": "c", "bat": "d"])
        try await foo.child("baz").cancelDisconnectOperations()
        let shown = Recorder<[String: String]>()
        foo.observe(.value) { shown.add($0.value as? [String: String] ?? [:]) }
        #expect(try await shown.wait(for: 1) == [["bar": "a", "baz": "b"]])
        let seen = Recorder<[String: String]>()
        watcher.reference().child("cancel-below/\(transport)/foo").observe(.value) { seen.add($0.value as? [String: String] ?? [:]) }
        #expect(try await seen.wait(for: 1) == [["bar": "a", "baz": "b"]])
        user.goOffline()
        let expected = ["bar": "a", "baz": "b", "bat": "d"]
        #expect(try await seen.wait(for: 2).last == expected, "the server ran bat's part only")
        #expect(try await shown.wait(for: 2).last == expected, "the client shows what the server runs")
        user.goOnline()
    }

    /// Firebase's presence code (offline-capabilities guide) registers its onDisconnect writes
    /// each time `.info/connected` turns true: after `goOffline()` and `goOnline()` it must turn
    /// true again, with nothing else waiting to be sent.
    @Test(arguments: ["native", "http"])
    func connectedTurnsTrueAgainAfterGoOnlineAndPresenceReRegisters(transport: String) async throws {
        let watcher = self.database(self.daemon.tcpURL)
        let user = self.database(self.userURL(transport))
        let me = user.reference().child("presence/grace-\(transport)")
        let connected = Recorder<Bool>()
        let wrote = Recorder<Bool>()
        user.reference(withPath: ".info/connected").observe(.value) { snapshot in
            let on = snapshot.value as? Bool ?? false
            connected.add(on)
            guard on else { return }
            me.onDisconnectSetValue("offline")
            me.setValue("online") { error, _ in wrote.add(error == nil) }
        }
        let start = try await connected.connectedStart()  // [false, true], or [true]: see connectedStart
        #expect(try await wrote.wait(for: 1) == [true])
        let seen = Recorder<String>()
        watcher.reference().child("presence/grace-\(transport)").observe(.value) { seen.add($0.value as? String ?? "none") }
        #expect(try await seen.wait(for: 1) == ["online"])
        user.goOffline()
        #expect(try await seen.wait(for: 2, explain: { "eddyd's log: " + self.daemon.logTail(containing: ["connection closed", "onDisconnect writes"]) + "; eddyd holds " + (await self.daemon.serverJSON("presence/grace-\(transport)")) }) == ["online", "offline"])
        user.goOnline()
        #expect(try await connected.wait(for: start.count + 2) == start + [false, true])
        // Online again: the observer registered the write again and wrote "online".
        #expect(try await seen.wait(for: 3) == ["online", "offline", "online"])
        user.goOffline()
        #expect(try await seen.wait(for: 4) == ["online", "offline", "online", "offline"])
        user.goOnline()
    }

    /// `.info` is a location like any other to its observers, as in Firebase: child events for
    /// `connected` and `serverTimeOffset`, `childChanged` when the connection comes and goes.
    @Test func childEventsUnderInfo() async throws {
        let user = self.database(self.daemon.socketURL)
        let info = user.reference(withPath: ".info")
        // The observers come while the client is offline: a connection made before they were
        // added (a loaded machine) would raise no change for them to hear.
        user.goOffline()
        for _ in 0..<200 where try await info.child("connected").getData().value as? Bool != false {
            try await Task.sleep(for: .milliseconds(10))
        }
        let added = Recorder<String>()
        let changed = Recorder<String>()
        let first = Recorder<String>()
        info.observe(.childAdded) { snapshot, previous in added.add("\(snapshot.key)<\(previous ?? "nil")") }
        info.observe(.childChanged) { snapshot, _ in changed.add("\(snapshot.key)=\(snapshot.value as? Bool ?? false)") }
        info.observeSingleEvent(of: .childAdded) { snapshot in first.add(snapshot.key) }
        #expect(try await added.wait(for: 2) == ["connected<nil", "serverTimeOffset<connected"])
        #expect(try await first.wait(for: 1) == ["connected"])
        user.goOnline()
        #expect(try await changed.wait(for: 1) == ["connected=true"])
        user.goOffline()
        #expect(try await changed.wait(for: 2) == ["connected=true", "connected=false"])
        user.goOnline()
        #expect(try await changed.wait(for: 3) == ["connected=true", "connected=false", "connected=true"])
        #expect(added.all.count == 2 && first.all.count == 1)
    }

    /// As Firebase's clients do, the client shows its own onDisconnect writes when its
    /// connection ends, at once and while offline; once connected again the server's data
    /// replaces them (a write the rules refused when it ran disappears). A write the rules deny
    /// when it is registered is refused then, as Firebase's server refuses it, and never shown.
    @Test(arguments: ["native", "http"])
    func theClientShowsItsOwnOnDisconnectWritesWhenItsConnectionEnds(transport: String) async throws {
        // "locked" may be written while registering; the rules lock it before the writes run.
        try await self.daemon.putRules(#"{"rules": {".read": true, "own": {".write": true}, "locked": {".write": true}}}"#)
        let user = self.database(self.userURL(transport))
        let me = user.reference().child("own/\(transport)")
        let locked = user.reference().child("locked/\(transport)")
        try await me.setValue(["status": "online", "n": 1, "kept": "yes"])
        let seen = Recorder<String>()
        me.observe(.value) { snapshot in
            let value = snapshot.value as? [String: Any] ?? [:]
            let fields = value.keys.sorted().map { key in key == "seen" ? "seen=\(value[key] is NSNumber)" : "\(key)=\(value[key]!)" }
            seen.add(fields.joined(separator: ","))
        }
        let lockedSeen = Recorder<String>()
        locked.observe(.value) { lockedSeen.add($0.value as? String ?? "none") }
        #expect(try await seen.wait(for: 1) == ["kept=yes,n=1,status=online"])
        #expect(try await lockedSeen.wait(for: 1) == ["none"])

        try await me.child("status").onDisconnectSetValue("offline")
        try await me.onDisconnectUpdateChildValues(["seen": ServerValue.timestamp()])
        try await me.child("n").onDisconnectRemoveValue()
        try await me.child("kept").onDisconnectSetValue("changed")
        try await me.child("kept").cancelDisconnectOperations()
        try await locked.onDisconnectSetValue("denied when it runs")
        // Writes granted above cannot be taken back below: "locked" is now outside what is writable.
        try await self.daemon.putRules(#"{"rules": {".read": true, "own": {".write": true}, "locked": {".write": false}}}"#)
        let refused = Recorder<String>()
        locked.parent!.child("never").onDisconnectSetValue("denied when registered") { error, _ in
            refused.add(error.map { "\(($0 as NSError).code) \($0.localizedDescription)" } ?? "registered")
        }
        #expect(try await refused.wait(for: 1) == ["1 Permission denied"])
        #expect(seen.all.count == 1 && lockedSeen.all.count == 1, "registered, not shown yet")

        user.goOffline()
        #expect(try await seen.wait(for: 2)[1] == "kept=yes,seen=true,status=offline")
        #expect(try await lockedSeen.wait(for: 2) == ["none", "denied when it runs"])
        user.goOnline()
        // The server refused the locked write when it ran: the server's data takes it back.
        #expect(try await lockedSeen.wait(for: 3) == ["none", "denied when it runs", "none"])
        // eddyd runs the writes one after another once the connection ended; the client may be
        // back before the last one landed. Wait for it (at most 10 s).
        let watcher = self.database(self.daemon.tcpURL).reference().child("own/\(transport)")
        var server: [String: Any] = [:]
        for _ in 0..<1000 {
            server = try await watcher.getData().value as? [String: Any] ?? [:]
            if server["status"] as? String == "offline" && server["n"] == nil && server["seen"] != nil { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(server["status"] as? String == "offline" && server["n"] == nil && server["seen"] is Double && server["kept"] as? String == "yes")
    }

    /// Two apps with the same database URL are two clients, as in Firebase (a test of two
    /// users, or two devices, in one process): each has its own instance and connection, so one
    /// going offline runs its onDisconnect writes while the other, still online, sees them.
    @Test(arguments: ["native", "http"])
    func twoAppsOfOneURLAreTwoClients(transport: String) async throws {
        let url = self.userURL(transport)
        let apps = try ["phone", "laptop"].map { device in
            let options = FirebaseOptions(googleAppID: "1:1:ios:1", gcmSenderID: "1")
            options.databaseURL = url
            let name = "\(device)-\(transport)-\(UUID().uuidString)"
            FirebaseApp.configure(name: name, options: options)
            return try #require(FirebaseApp.app(name: name))
        }
        let phone = Database.database(app: apps[0])
        let laptop = Database.database(app: apps[1])
        #expect(phone !== laptop && phone.app === apps[0] && laptop.app === apps[1])
        #expect(Database.database(app: apps[0]) === phone, "one instance per app and URL")
        phone.callbackQueue = self.queue
        laptop.callbackQueue = self.queue
        let status = phone.reference().child("devices/\(transport)/phone")
        try await status.setValue("online")
        try await status.onDisconnectSetValue("offline")
        let seen = Recorder<String>()
        laptop.reference().child("devices/\(transport)/phone").observe(.value) { seen.add($0.value as? String ?? "none") }
        #expect(try await seen.wait(for: 1) == ["online"])
        phone.goOffline()
        #expect(try await seen.wait(for: 2, explain: { "eddyd's log: " + self.daemon.logTail(containing: ["connection closed", "onDisconnect writes"]) + "; eddyd holds " + (await self.daemon.serverJSON("devices/\(transport)")) }) == ["online", "offline"], "the laptop stays online and hears the phone's onDisconnect write")
        let laptopConnected = Recorder<Bool>()
        laptop.reference(withPath: ".info/connected").observeSingleEvent(of: .value) { laptopConnected.add($0.value as? Bool ?? false) }
        #expect(try await laptopConnected.wait(for: 1) == [true])
        let wrote = Recorder<Bool>()
        laptop.reference().child("devices/\(transport)/laptop").setValue("online") { error, _ in wrote.add(error == nil) }
        #expect(try await wrote.wait(for: 1, seconds: 10) == [true], "the laptop's writes still reach eddyd")
        // Deleting an app takes its instance offline and forgets it.
        #expect(await apps[1].delete())
        #expect(await apps[0].delete())
    }

    /// As Firebase queues them, onDisconnect calls made offline wait for the connection and
    /// register once it is back (they do not fail).
    @Test(arguments: ["native", "http"])
    func onDisconnectCallsMadeOfflineRegisterOnceOnline(transport: String) async throws {
        let user = self.database(self.userURL(transport))
        let watcher = self.database(self.daemon.tcpURL)
        let me = user.reference().child("queued/\(transport)")
        try await me.setValue("online")
        user.goOffline()
        let done = Recorder<String>()
        me.onDisconnectSetValue("offline") { error, _ in done.add(error.map { "\($0)" } ?? "registered") }
        try await Task.sleep(for: .milliseconds(200))
        #expect(done.all.isEmpty, "it waits for the connection: \(done.all)")
        user.goOnline()
        #expect(try await done.wait(for: 1) == ["registered"])
        let seen = Recorder<String>()
        watcher.reference().child("queued/\(transport)").observe(.value) { seen.add($0.value as? String ?? "none") }
        #expect(try await seen.wait(for: 1) == ["online"])
        user.goOffline()
        #expect(try await seen.wait(for: 2, explain: { "eddyd's log: " + self.daemon.logTail(containing: ["connection closed", "onDisconnect writes"]) + "; eddyd holds " + (await self.daemon.serverJSON("queued/\(transport)")) }) == ["online", "offline"])
        user.goOnline()
    }

    /// `goOffline()` takes effect at once: a write made right after it waits, and
    /// `purgeOutstandingWrites()` cancels it before it reaches eddyd.
    @Test func aWriteRightAfterGoOfflineWaitsAndCanBePurged() async throws {
        let user = self.database(self.daemon.socketURL)
        let ref = user.reference().child("purged/x")
        try await ref.setValue(1)
        let outcome = Recorder<String>()
        user.goOffline()
        ref.setValue(2) { error, _ in outcome.add(error.map { "\($0)" } ?? "nil") }
        user.purgeOutstandingWrites()
        #expect(try await outcome.wait(for: 1).first?.contains("write_canceled") == true)
        user.goOnline()
        #expect(try await ref.getData().value as? Int == 1)
    }

    /// Over HTTP the connection lives as long as eddyd's onDisconnect stream; when eddyd ends it
    /// (here by stopping), the client sees `.info/connected` turn false, opens a new one when eddyd
    /// is back, sees it turn true, and the presence code registers again on the new one.
    @Test func overHTTPALostConnectionIsReopenedAndPresenceRegistersAgain() async throws {
        let user = self.database(self.daemon.restURL)
        let me = user.reference().child("presence/hopper")
        let connected = Recorder<Bool>()
        user.reference(withPath: ".info/connected").observe(.value) { snapshot in
            let on = snapshot.value as? Bool ?? false
            connected.add(on)
            guard on else { return }
            me.onDisconnectSetValue("offline")
            me.setValue("online")
        }
        let start = try await connected.connectedStart()
        // Registered: a cancel on the same connection finds it.
        try await me.cancelDisconnectOperations()
        try await me.onDisconnectSetValue("offline")
        try await self.daemon.restart()
        #expect(try await connected.wait(for: start.count + 2) == start + [false, true])
        // Back: "offline" ran at the stop, "online" was written again, and the write registered
        // on the new connection runs when it ends.
        for _ in 0..<500 where try await me.getData().value as? String != "online" { try await Task.sleep(for: .milliseconds(10)) }
        #expect(try await me.getData().value as? String == "online")
        user.goOffline()
        let watcher = self.database(self.daemon.tcpURL)
        for _ in 0..<500 where try await watcher.reference().child("presence/hopper").getData().value as? String != "offline" {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try await watcher.reference().child("presence/hopper").getData().value as? String == "offline")
        user.goOnline()
    }
}
