// Local events first (latency compensation and its revert), writes that wait across a lost
// connection, `.info/connected`, Realm-style change sets with key paths and
// `write(withoutNotifying:)`, delegates and NotificationCenter posting: each against a real
// eddyd over its Unix socket.

import Dispatch
import EddyClient
import Foundation
import Observation
import Testing

@Suite(.serialized) struct LocalEventsAndChangeSetsTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.client.local-events")

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    func database() -> Database {
        let database = Database.database(url: self.daemon.socketURL)
        database.callbackQueue = self.queue
        return database
    }

    @Test func aWriteRaisesItsEventsBeforeTheServerAnswers() async throws {
        let list = self.database().reference().child("local/list")
        let log = Recorder<String>()
        list.observe(.childAdded) { log.add("added \($0.key)") }
        list.observe(.value) { log.add("value \($0.childrenCount)") }
        _ = try await log.wait(for: 1)
        list.child("a").setValue(1) { error, _ in log.add("done \(error == nil)") }
        let got = try await log.wait(for: 4)
        #expect(got == ["value 0", "added a", "value 1", "done true"], "the local events come first, the server's add nothing: \(got)")
        try await Task.sleep(for: .milliseconds(100))
        #expect(log.all.count == 4, "no event repeats once the server's own arrives: \(log.all)")
    }

    /// firebase-js-sdk's "can properly handle unknown deep merges": an update of a child's field
    /// made before the view has the child's data shows a part of the child only, so it raises no
    /// event (Firebase's view cache holds complete children): the query hears its two children,
    /// and a plain observer hears the updated child once, whole.
    ///
    /// The instance is offline while the observers are added and the update is made, so the
    /// update surely comes before the view's data (online, the first batch may be applied
    /// before the update is made when the test's thread is held up: the update then changes a
    /// loaded child, and `changed` is right). Back online, the subscribe and the update go in
    /// either order: both give the same events.
    @Test(arguments: [true, false]) func anUpdateOfAChildNotLoadedRaisesNoPartialChild(query: Bool) async throws {
        let database = self.database()
        let root = database.reference().child("local/deep-merge-\(query)")
        try await root.setValue([
            "i1": ["testIndex": 3, "action": "test"], "i2": ["testIndex": 1, "action": "test"], "i3": ["testIndex": 2, "action": "test"],
        ])
        database.goOffline()
        defer { database.goOnline() }
        let observed: DatabaseQuery = query ? root.queryOrdered(byChild: "testIndex").queryLimited(toFirst: 2) : root
        let log = Recorder<String>()
        for kind in [DataEventType.childAdded, .childChanged, .childRemoved] {
            observed.observe(kind) { log.add("\(kind == .childAdded ? "added" : kind == .childChanged ? "changed" : "removed") \($0.key) \($0.childrenCount)") }
        }
        let answered = Recorder<Bool>()
        root.child("i1").updateChildValues(["timestamp": "t|1"]) { error, _ in answered.add(error == nil) }  // before the view's data
        try await Task.sleep(for: .milliseconds(50))
        #expect(log.all.isEmpty, "a part of a child not loaded raises nothing: \(log.all)")
        database.goOnline()
        #expect(try await answered.wait(for: 1) == [true])
        let expected = query ? ["added i2 2", "added i3 2"] : ["added i1 3", "added i2 2", "added i3 2"]
        #expect(try await log.wait(for: expected.count) == expected)
        try await Task.sleep(for: .milliseconds(300))
        #expect(log.all == expected)
    }

    /// FData.m testEmptyChildGetValueEventBeforeParent, testUpdateRaisesCorrectLocalEvents: one
    /// change's local events come in Firebase's order across locations (depth first, children in
    /// key order, each location after its descendants), whatever order the observers were added in.
    @Test func aChangesLocalEventsComeInFirebasesEventOrder() async throws {
        let t = self.database().reference().child("local/deepest-first")
        let log = Recorder<String>()
        t.observe(.value) { _ in log.add("t value") }
        t.child("a/aa").observe(.value) { _ in log.add("t/a/aa value") }
        t.observe(.childAdded) { log.add("t added \($0.key)") }
        t.child("a").observe(.value) { _ in log.add("t/a value") }
        t.child("d").observe(.value) { _ in log.add("t/d value") }
        _ = try await log.wait(for: 4)
        try await Task.sleep(for: .milliseconds(100))
        let initial = log.all.count
        t.updateChildValues(["a/aa": 1, "d": 2]) { _, _ in }
        let all = try await log.wait(for: initial + 6)
        #expect(Array(all[initial...]) == ["t/a/aa value", "t/a value", "t/d value", "t added a", "t added d", "t value"], "\(all)")
    }

    /// FData.m testUpdateRaisesCorrectRemoteEvents: another client's change reaches the
    /// observers in Firebase's order too (eddyd sends one entry's events depth first, children
    /// in key order, each location after its descendants), whatever order they were added in.
    @Test func anotherClientsChangeComesInFirebasesEventOrder() async throws {
        let writer = Database.database(url: self.daemon.tcpURL).reference().child("remote/order")
        try await writer.setValue(["a": ["aa": 1], "b": 2, "d": 4])
        let t = self.database().reference().child("remote/order")
        let log = Recorder<String>()
        t.observe(.value) { _ in log.add("t value") }
        t.child("d").observe(.value) { _ in log.add("t/d value") }
        t.observe(.childChanged) { log.add("t changed \($0.key)") }
        t.child("a").observe(.value) { _ in log.add("t/a value") }
        t.child("a/aa").observe(.value) { _ in log.add("t/a/aa value") }
        _ = try await log.wait(for: 4)
        try await Task.sleep(for: .milliseconds(200))
        let initial = log.all.count
        try await writer.updateChildValues(["a/aa": 5, "d": 1])
        let all = try await log.wait(for: initial + 6)
        #expect(
            Array(all[initial...]) == ["t/a/aa value", "t/a value", "t/d value", "t changed a", "t changed d", "t value"], "\(all)")
    }

    /// FEventTests testUnsubscribeEventsAndConfirmThatEventsNoLongerFire: the local events of
    /// three writes made before removeObserver all reach the observer; none after it.
    @Test func eventsRaisedBeforeRemoveObserverAreDelivered() async throws {
        let ref = self.database().reference().child("local/unsubscribe")
        let log = Recorder<String>()
        try await ref.setValue(-1)
        let handle = ref.observe(.value) { log.add("\($0.value ?? "nil")") }
        _ = try await log.wait(for: 1)
        self.queue.sync {
            // On the callback queue: nothing queued can run before the removal.
            for i in 0..<3 { ref.setValue(i) { _, _ in } }
            ref.removeObserver(withHandle: handle)
        }
        try await ref.setValue(9)
        try await Task.sleep(for: .milliseconds(200))
        #expect(log.all == ["-1", "0", "1", "2"], "\(log.all)")
    }

    @Test func aRefusedWriteIsTakenBackBeforeItsCompletion() async throws {
        let list = self.database().reference().child("local/refused")
        try await list.child("kept").setValue(true)
        let log = Recorder<String>()
        list.observe(.childAdded) { log.add("added \($0.key)") }
        list.observe(.childRemoved) { log.add("removed \($0.key)") }
        _ = try await log.wait(for: 1)
        // A path and its ancestor in one update: the server refuses the whole update.
        list.updateChildValues(["x": 1, "x/y": 2]) { error, _ in log.add("done \(error.map { "\(($0 as! DatabaseError).code)" } ?? "nil")") }
        let got = try await log.wait(for: 4)
        #expect(got == ["added kept", "added x", "removed x", "done invalidValue"], "\(got)")
        #expect(try await list.getData().childrenCount == 1)
    }

    /// A value eddyd would refuse (a key with ".", a string too long) fails at once, before any
    /// local event: observers never see it (Firebase's SDK raises at the call).
    @Test func anInvalidValueFailsBeforeAnyLocalEvent() async throws {
        let location = self.database().reference().child("local/invalid")
        try await location.setValue(["ok": 1])
        let log = Recorder<String>()
        location.observe(.value) { log.add("value \($0.childrenCount)") }
        _ = try await log.wait(for: 1)
        location.setValue(["a.b": 1]) { error, _ in log.add("done \((error as? DatabaseError)?.message.contains("a.b") == true)") }
        location.child("long").setValue(String(repeating: "x", count: 10 << 20 + 1)) { error, _ in
            log.add("done \((error as? DatabaseError)?.message.contains("stringBytesMax") == true)")
        }
        location.updateChildValues(["c/d.e": 1]) { error, _ in log.add("done \(error != nil)") }
        #expect(try await log.wait(for: 4) == ["value 1", "done true", "done true", "done true"])
        try await Task.sleep(for: .milliseconds(200))
        #expect(log.all.count == 4, "no local event came and went: \(log.all)")
        #expect(try await location.getData().value as? [String: Int] == ["ok": 1])
    }

    @Test func serverValuesAreEstimatedLocallyWithoutAFlicker() async throws {
        let posts = self.database().reference().child("local/estimated")
        try await posts.setValue(["p1": ["views": 10], "p2": ["views": 20]])
        let log = Recorder<String>()
        // Unindexed: evaluated on the client over the whole location.
        posts.queryOrdered(byChild: "views").observe(.value) { snapshot in
            log.add((snapshot.children.allObjects as! [DataSnapshot]).map { "\($0.key)=\($0.childSnapshot(forPath: "views").value ?? "")" }.joined(separator: ","))
        }
        _ = try await log.wait(for: 1)
        try await posts.child("p1/views").setValue(ServerValue.increment(100))
        try await Task.sleep(for: .milliseconds(300))
        #expect(log.all == ["p1=10,p2=20", "p2=20,p1=110"], "one change, estimated at once: \(log.all)")
    }

    @Test func offlineWritesRaiseEventsAndAreSentWhenBackOnline() async throws {
        let database = self.database()
        let ref = database.reference().child("local/offline")
        let log = Recorder<String>()
        ref.observe(.value) { log.add("value \(($0.value as? Int).map(String.init) ?? "null")") }
        _ = try await log.wait(for: 1)
        database.goOffline()
        ref.setValue(7) { error, _ in log.add("done \(error == nil)") }
        _ = try await log.wait(for: 2)
        try await Task.sleep(for: .milliseconds(200))
        #expect(log.all == ["value null", "value 7"], "offline, the write is shown and waits: \(log.all)")
        database.goOnline()
        let got = try await log.wait(for: 3)
        #expect(got.last == "done true")
        #expect(try await ref.getData().value as? Int == 7)
    }

    /// Firebase: offline, local operations "continue to immediately fire events". A location
    /// observed while offline and never loaded has no value event until something makes its
    /// data known: a write that replaces it whole does (child writes alone do not).
    @Test func anOfflineSetOfALocationNeverLoadedRaisesItsValueAtOnce() async throws {
        let database = Database.database(url: self.daemon.tcpURL)  // an instance not connected yet
        database.callbackQueue = self.queue
        database.goOffline()
        let ref = database.reference().child("local/never-loaded")
        let log = Recorder<String>()
        ref.observe(.value) { log.add("value \($0.value.map { "\($0)" } ?? "nil")") }
        ref.child("x").setValue(1) { _, _ in }
        try await Task.sleep(for: .milliseconds(200))
        #expect(log.all.isEmpty, "a child write does not make the location known: \(log.all)")
        ref.setValue(["y": 2]) { _, _ in }
        #expect(try await log.wait(for: 1) == ["value [\"y\": 2]"])
        let later = Recorder<String>()
        ref.observe(.value) { later.add("value \($0.value.map { "\($0)" } ?? "nil")") }
        #expect(try await later.wait(for: 1) == ["value [\"y\": 2]"], "an observer added later hears it too")
        database.goOnline()
        #expect(try await ref.getData().value as? [String: Int] == ["y": 2])
        try await Task.sleep(for: .milliseconds(200))
        #expect(log.all == ["value [\"y\": 2]"], "the server's equal data raises no second value: \(log.all)")
    }

    /// FData.m checkServerIncrementOverwritesExistingDataWhileOnline:NO: before any server data,
    /// an increment adds to what the client's own earlier writes make the location (5 + 1),
    /// and replaces a string or an object with its delta.
    @Test func anIncrementAddsToTheClientsOwnEarlierWrites() async throws {
        let database = Database.database(url: self.daemon.tcpURL + "?ns=increment-local")
        database.callbackQueue = self.queue
        database.goOffline()
        let ref = database.reference().child("local/increment")
        let log = Recorder<String>()
        ref.observe(.value) { log.add("\($0.value.map { "\($0)" } ?? "nil")") }
        ref.setValue(ServerValue.increment(1)) { _, _ in }
        ref.setValue(5) { _, _ in }
        ref.setValue(ServerValue.increment(1)) { _, _ in }
        ref.setValue("hello") { _, _ in }
        ref.setValue(ServerValue.increment(1)) { _, _ in }
        ref.setValue(["hello": "world"]) { _, _ in }
        ref.setValue(ServerValue.increment(1)) { _, _ in }
        #expect(try await log.wait(for: 7) == ["1", "5", "6", "hello", "1", "[\"hello\": \"world\"]", "1"])
        database.goOnline()
        #expect(try await ref.getData().value as? Int == 1)
    }

    /// FIRDatabaseQueryTests testGetProbesInMemoryCacheForActiveListenerWhenOffline: a value an
    /// observer shows from the client's own write (before any server data) answers getData
    /// offline; so does a waiting write that replaced a location no observer holds.
    @Test func getDataOfflineAnswersFromTheClientsOwnWrites() async throws {
        let database = Database.database(url: self.daemon.tcpURL + "?ns=getdata-own-writes")
        database.callbackQueue = self.queue
        database.goOffline()
        let observed = database.reference().child("local/observed")
        let values = Recorder<String>()
        observed.observe(.value) { values.add("\($0.value ?? "nil")") }
        observed.setValue(42) { _, _ in }
        #expect(try await values.wait(for: 1) == ["42"])
        #expect(try await observed.getData().value as? Int == 42)
        let unobserved = database.reference().child("local/unobserved")
        unobserved.setValue(["a": 7]) { _, _ in }
        #expect(try await unobserved.child("a").getData().value as? Int == 7)
        database.goOnline()
        #expect(try await unobserved.getData().value as? [String: Int] == ["a": 7])
    }

    /// Firebase's `getData`: "If not connected, it returns a locally-cached value": what a live
    /// observer holds, for its own query or a location inside an observed one.
    @Test func getDataOfflineAnswersFromWhatObserversHold() async throws {
        let database = self.database()
        let scores = database.reference().child("local/cached-scores")
        try await scores.setValue(["a": 1, "b": 5, "c": 3, "d": 9, "e": 7])
        let lastThree = scores.queryOrderedByValue().queryLimited(toLast: 3)
        let seen = Recorder<Int>()
        lastThree.observe(.value) { seen.add(Int($0.childrenCount)) }
        let whole = Recorder<Int>()
        scores.observe(.value) { whole.add(Int($0.childrenCount)) }
        _ = try await seen.wait(for: 1)
        _ = try await whole.wait(for: 1)
        database.goOffline()
        let same = try await lastThree.getData()
        #expect(same.value as? [String: Int] == ["b": 5, "e": 7, "d": 9])
        #expect(try await scores.child("d").getData().value as? Int == 9)
        let firstTwo = try await scores.queryOrderedByValue().queryLimited(toFirst: 2).getData()
        #expect(firstTwo.value as? [String: Int] == ["a": 1, "c": 3], "evaluated here on the observed location")
        await #expect(throws: DatabaseError.self) { try await database.reference().child("local/not-observed").getData() }
        database.goOnline()
    }

    /// Firebase's offline guide, "Querying Data Offline": a query made offline inside one
    /// already loaded (a limitToLast(2) inside a loaded limitToLast(4)) raises child_added for
    /// the children the client holds, but no value, "since the app has never executed that
    /// query while online"; once connected the value comes, and nothing is raised twice. Here
    /// the server has no index, so the loaded query holds the whole location.
    @Test func observersAddedOfflineHearWhatIsAlreadyLoaded() async throws {
        let database = self.database()
        let scores = database.reference().child("local/seeded-scores")
        try await scores.setValue(["a": 1, "b": 5, "c": 3, "d": 9, "e": 7])
        let loaded = Recorder<Int>()
        scores.queryOrderedByValue().queryLimited(toLast: 4).observe(.value) { loaded.add(Int($0.childrenCount)) }
        #expect(try await loaded.wait(for: 1) == [4])
        database.goOffline()
        let log = Recorder<String>()
        let added = scores.queryOrderedByValue().queryLimited(toLast: 2).observe(.childAdded) { log.add("added \($0.key)") }
        let value = scores.queryOrderedByValue().queryLimited(toLast: 2).observe(.value) { log.add("value \($0.childrenCount)") }
        #expect(try await log.wait(for: 2) == ["added e", "added d"])
        let once = Recorder<String>()
        scores.queryOrderedByValue().queryLimited(toLast: 4).observeSingleEvent(of: .value) { once.add("\($0.childrenCount)") }
        #expect(try await once.wait(for: 1) == ["4"], "the loaded query itself answers with its value")
        try await Task.sleep(for: .milliseconds(300))
        #expect(log.all == ["added e", "added d"], "no value offline for a query never run online: \(log.all)")
        database.goOnline()
        #expect(try await log.wait(for: 3) == ["added e", "added d", "value 2"])
        try await Task.sleep(for: .milliseconds(300))
        #expect(log.all.count == 3, "the server's equal data adds nothing: \(log.all)")
        scores.removeObserver(withHandle: added)
        scores.removeObserver(withHandle: value)
    }

    /// The guide's example with an index on the server, which sends only the loaded query's
    /// window: offline, a limitToLast(2) hears the two highest of the four held, a
    /// limitToLast(6) the four held ("child added events for the four cached items straight
    /// away"); once connected the limitToLast(6) hears the other children and its value.
    @Test func aQueryMadeOfflineHearsTheChildrenAnotherQueryLoaded() async throws {
        try await self.daemon.putRules(#"{"rules": {".read": true, ".write": true, "local": {"dinosaur-scores": {".indexOn": ".value"}}}}"#)
        let database = self.database()
        let scores = database.reference().child("local/dinosaur-scores")
        try await scores.setValue(["bruhathkayosaurus": 55, "lambeosaurus": 21, "linhenykus": 80, "pterodactyl": 93, "stegosaurus": 5, "triceratops": 22])
        let loaded = Recorder<String>()
        let top4 = scores.queryOrderedByValue().queryLimited(toLast: 4).observe(.childAdded) { loaded.add($0.key) }
        #expect(try await loaded.wait(for: 4) == ["triceratops", "bruhathkayosaurus", "linhenykus", "pterodactyl"])
        database.goOffline()
        let top2 = Recorder<String>()
        let top2Added = scores.queryOrderedByValue().queryLimited(toLast: 2).observe(.childAdded) { top2.add("added \($0.key)") }
        let top2Value = scores.queryOrderedByValue().queryLimited(toLast: 2).observe(.value) { top2.add("value \($0.childrenCount)") }
        #expect(try await top2.wait(for: 2) == ["added linhenykus", "added pterodactyl"])
        let top6 = Recorder<String>()
        let top6Added = scores.queryOrderedByValue().queryLimited(toLast: 6).observe(.childAdded) { top6.add("added \($0.key)") }
        let top6Value = scores.queryOrderedByValue().queryLimited(toLast: 6).observe(.value) { top6.add("value \($0.childrenCount)") }
        #expect(try await top6.wait(for: 4) == ["added triceratops", "added bruhathkayosaurus", "added linhenykus", "added pterodactyl"])
        try await Task.sleep(for: .milliseconds(300))
        #expect(top2.all.count == 2 && top6.all.count == 4, "no value offline: \(top2.all) \(top6.all)")
        database.goOnline()
        let online = try await top6.wait(for: 7)
        #expect(Set(online[4..<6]) == ["added stegosaurus", "added lambeosaurus"], "\(online)")
        #expect(online.last == "value 6", "\(online)")
        #expect(try await top2.wait(for: 3) == ["added linhenykus", "added pterodactyl", "value 2"])
        for handle in [top4, top2Added, top2Value, top6Added, top6Value] { scores.removeObserver(withHandle: handle) }
    }

    /// FTransactionTest testResultSnapshotIsPassedToOnComplete: the completion's snapshot is the
    /// committed data; a server timestamp in it is a time, not the `{".sv": "timestamp"}` sent.
    @Test func aTransactionsSnapshotHoldsTheCommittedTime() async throws {
        let ref = self.database().reference().child("local/tx-timestamp")
        let before = Date().timeIntervalSince1970 * 1000 - 60_000
        let (committed, snapshot) = try await ref.runTransactionBlock { data in
            data.value = ["at": ServerValue.timestamp(), "n": 1]
            return TransactionResult.success(withValue: data)
        }
        #expect(committed)
        let at = snapshot.childSnapshot(forPath: "at").value as? Double
        #expect(at.map { $0 > before } == true, "\(snapshot.value ?? "nil")")
        let stored = try await ref.child("at").getData().value as? Double
        #expect(stored.map { abs($0 - at!) < 60_000 } == true, "the server's time, near the estimate")
    }

    /// FIRDatabaseTests testPurgeWritesCancelsTransactions and testPurgeWritesCancelsOnDisconnects:
    /// offline, purgeOutstandingWrites ends the waiting transactions and onDisconnect requests
    /// with write_canceled (code 3), at once; nothing of them reaches the server.
    @Test func purgeCancelsWaitingTransactionsAndOnDisconnects() async throws {
        let database = Database.database(url: self.daemon.tcpURL + "?ns=purge-cancels")
        database.callbackQueue = self.queue
        database.goOffline()
        let ref = database.reference().child("local/purge")
        let outcomes = Recorder<String>()
        for name in ["tx1", "tx2"] {
            ref.runTransactionBlock({ data in
                data.value = name
                return TransactionResult.success(withValue: data)
            }) { error, committed, _ in outcomes.add("\(name) \(committed) \((error as? DatabaseError)?.errorCode ?? 0)") }
        }
        ref.child("presence").onDisconnectSetValue("gone") { error, _ in outcomes.add("od \((error as? DatabaseError)?.errorCode ?? 0)") }
        // Elsewhere: a write at or below the transactions' location would abort them ("set").
        database.reference().child("local/purge-write").setValue(1) { error, _ in outcomes.add("write \((error as? DatabaseError)?.errorCode ?? 0)") }
        database.purgeOutstandingWrites()
        let got = Set(try await outcomes.wait(for: 4, seconds: 10))
        #expect(got == ["tx1 false 3", "tx2 false 3", "od 3", "write 3"], "\(got)")
        database.goOnline()
        #expect(try await ref.getData().exists() == false, "nothing purged reached the server")
        #expect(try await database.reference().child("local/purge-write").getData().exists() == false)
    }

    /// FIRDatabaseTests testPurgeWritesCancelsTransactions, with its observer: offline, two
    /// transactions each show their result at once (value 1, then 2, the second queued behind
    /// the first), so a purge right after takes both back (null) before their completions.
    @Test func purgedTransactionsShowedTheirResultsFirst() async throws {
        let database = Database.database(url: self.daemon.tcpURL + "?ns=purge-shown")
        database.callbackQueue = self.queue
        let ref = database.reference().child("local/purge-shown").childByAutoId()
        let events = Recorder<String>()
        ref.observe(.value) { events.add("value-\($0.value ?? "nil")") }
        #expect(try await events.wait(for: 1) == ["value-<null>"])
        database.goOffline()
        for name in ["1", "2"] {
            ref.runTransactionBlock({ data in
                data.value = name
                return TransactionResult.success(withValue: data)
            }) { error, _, _ in events.add("cancel-\(name) \((error as? DatabaseError)?.errorCode ?? 0)") }
        }
        database.purgeOutstandingWrites()
        let got = try await events.wait(for: 6, seconds: 10)
        #expect(Array(got[..<4]) == ["value-<null>", "value-1", "value-2", "value-<null>"], "\(got)")
        #expect(Set(got[4...]) == ["cancel-1 3", "cancel-2 3"], "\(got)")
        database.goOnline()
    }

    /// FIRDatabaseTests testPurgeWritesReraisesEvents: every purged write is taken back, its
    /// events raised, before the first completion block runs: each sees the server's data.
    @Test func purgeRaisesTheRevertsBeforeAnyCompletion() async throws {
        let database = Database.database(url: self.daemon.tcpURL + "?ns=purge-reraises")
        database.callbackQueue = self.queue
        let ref = database.reference().child("local/purge-reraise")
        try await ref.setValue(["foo": "foo-value", "bar": ["qux": "qux-value"]])
        let log = Recorder<String>()
        ref.child("foo").observe(.value) { log.add("foo \($0.value ?? "nil")") }
        ref.child("bar/qux").observe(.value) { log.add("qux \($0.value ?? "nil")") }
        _ = try await log.wait(for: 2)
        database.goOffline()
        ref.child("foo").setValue("new-foo-value") { error, _ in log.add("done foo-1 \((error as? DatabaseError)?.errorCode ?? 0)") }
        ref.child("bar").updateChildValues(["qux": "new-qux-value"]) { error, _ in
            log.add("done bar \((error as? DatabaseError)?.errorCode ?? 0)")
        }
        ref.child("foo").setValue("newest-foo-value") { error, _ in log.add("done foo-2 \((error as? DatabaseError)?.errorCode ?? 0)") }
        _ = try await log.wait(for: 5)
        database.purgeOutstandingWrites()
        let all = try await log.wait(for: 10)
        #expect(
            Array(all[5...]) == ["foo foo-value", "qux qux-value", "done foo-1 3", "done bar 3", "done foo-2 3"], "\(all)")
        database.goOnline()
        #expect(try await ref.child("foo").getData().value as? String == "foo-value")
    }

    /// FTransactionTest testSecondTransactionGetsRunImmediatelyOnPreviousOutputAndOnlyRunsOnce:
    /// online, with no observer, a second transaction made while the first one's write is on
    /// its way runs once, on the first one's result (not on null, then again on the server's
    /// data), and both commit. An "abort on null" block therefore commits too.
    @Test func aSecondTransactionRunsOnceOnTheFirstOnesResult() async throws {
        let database = self.database()
        try await database.reference().child("local/warm").setValue(true)  // connected
        for round in 0..<3 {
            let ref = database.reference().child("local/second-transaction").childByAutoId()
            let inputs = Recorder<String>()
            let outcomes = Recorder<String>()
            // eddyd stopped for the two calls: the first one's write is surely on its way, not
            // answered, when the second is made (a loaded machine could otherwise put this
            // thread off for a round trip, after which Firebase's second block would see null too).
            self.daemon.pause()
            ref.runTransactionBlock({ data in
                data.value = 42
                return TransactionResult.success(withValue: data)
            }) { error, committed, _ in outcomes.add("first \(error == nil) \(committed)") }
            ref.runTransactionBlock({ data in
                inputs.add("\(data.value ?? "nil")")
                guard let value = data.value as? Int else { return TransactionResult.abort() }
                data.value = value + 1
                return TransactionResult.success(withValue: data)
            }) { error, committed, snapshot in outcomes.add("second \(error == nil) \(committed) \(snapshot?.value ?? "nil")") }
            self.daemon.signal(SIGCONT)
            #expect(Set(try await outcomes.wait(for: 2)) == ["first true true", "second true true 43"], "round \(round)")
            #expect(inputs.all == ["42"], "round \(round): the second block runs once, on the first one's result: \(inputs.all)")
            #expect(try await ref.getData().value as? Int == 43)
        }
    }

    /// FIRDatabaseQueryTests testItemsPulledIntoLimitCorrectly: with the whole location
    /// observed, a limitToLast(2) whose child `b` is removed while the set that made them still
    /// waits pulls `a` in once, and never shows it leave and come back as the two writes are
    /// answered (its window was evaluated on its own server window, which lacks `a`).
    @Test func aChildPulledIntoALimitStaysWhileWritesAreAnswered() async throws {
        let database = self.database()
        try await database.reference().child("local/warm").setValue(true)  // connected
        for round in 0..<10 {
            let ref = database.reference().child("local/pulled-into-limit").childByAutoId()
            // eddyd stopped until both writes are made: the location's server value (null)
            // cannot come before the set is applied locally. (On a loaded machine this thread
            // could otherwise be put off for a round trip, and the first value event would
            // rightly be that null: CI saw it once.)
            self.daemon.pause()
            let whole = ref.observe(.value) { _ in }
            let snaps = Recorder<String>()
            let limited = ref.queryLimited(toLast: 2).observe(.value) { snapshot in
                let data = (try? JSONSerialization.data(withJSONObject: snapshot.value ?? NSNull(), options: [.sortedKeys, .fragmentsAllowed]))
                snaps.add(data.map { String(decoding: $0, as: UTF8.self) } ?? "?")
            }
            ref.setValue(["a": 1, "b": 2, "c": 3]) { _, _ in }
            let done = Recorder<Bool>()
            ref.child("b").setValue(nil) { error, _ in done.add(error == nil) }
            self.daemon.signal(SIGCONT)
            #expect(try await done.wait(for: 1) == [true])
            try await Task.sleep(for: .milliseconds(150))
            #expect(snaps.all == [#"{"b":2,"c":3}"#, #"{"a":1,"c":3}"#], "round \(round): \(snaps.all)")
            ref.removeObserver(withHandle: whole)
            ref.removeObserver(withHandle: limited)
        }
    }

    /// Offline, a transaction waiting behind another on its location runs its block at once
    /// too, on the first one's shown result (FTransactionTest's offline ordering: values 1 then
    /// 2 while offline); back online both commit without running again.
    @Test func stackedTransactionsMadeOfflineEachShowTheirResult() async throws {
        let database = self.database()
        let counter = database.reference().child("local/offline-stacked")
        try await counter.setValue(0)
        let shown = Recorder<Int>()
        counter.observe(.value) { shown.add(($0.value as? Int) ?? -1) }
        #expect(try await shown.wait(for: 1) == [0])
        database.goOffline()
        let inputs = Recorder<Int>()
        let outcomes = Recorder<String>()
        for name in ["first", "second"] {
            counter.runTransactionBlock({ data in
                inputs.add((data.value as? Int) ?? -1)
                data.value = ((data.value as? Int) ?? 0) + 1
                return TransactionResult.success(withValue: data)
            }) { error, committed, snapshot in
                outcomes.add("\(name) \(error == nil) \(committed) \(snapshot?.value.map { "\($0)" } ?? "nil")")
            }
        }
        #expect(try await shown.wait(for: 3) == [0, 1, 2], "each block's result shows at once, offline")
        #expect(inputs.all == [0, 1])
        database.goOnline()
        #expect(try await outcomes.wait(for: 2) == ["first true true 1", "second true true 2"])
        #expect(inputs.all == [0, 1], "the server's data was what each block saw: no second run")
        #expect(try await counter.getData().value as? Int == 2)
        try await Task.sleep(for: .milliseconds(200))
        #expect(shown.all == [0, 1, 2], "no flash back: \(shown.all)")
    }

    /// Firebase queues a transaction made offline and runs it once back online.
    @Test func aTransactionMadeOfflineRunsOnceBackOnline() async throws {
        let database = self.database()
        let counter = database.reference().child("local/offline-counter")
        try await counter.setValue(5)
        database.goOffline()
        let outcome = Recorder<String>()
        counter.runTransactionBlock({ data in
            data.value = ((data.value as? Int) ?? 0) + 1
            return TransactionResult.success(withValue: data)
        }) { error, committed, snapshot in
            outcome.add("\(error.map { "\($0)" } ?? "nil") \(committed) \(snapshot?.value.map { "\($0)" } ?? "nil")")
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(outcome.all.isEmpty, "it waits for the connection instead of failing: \(outcome.all)")
        database.goOnline()
        #expect(try await outcome.wait(for: 1) == ["nil true 6"])
        #expect(try await counter.getData().value as? Int == 6)
    }

    /// As Firebase's clients do, a transaction made offline on data an observer holds runs its
    /// block at once on that data and shows the result; once online it runs again only because
    /// the server's data changed meanwhile, and the observers go from the local result to the
    /// committed one without flashing back.
    @Test func aTransactionMadeOfflineRunsFirstOnTheDataTheClientHolds() async throws {
        let database = self.database()
        let other = Database.database(url: self.daemon.tcpURL)
        let counter = database.reference().child("local/offline-first")
        try await counter.setValue(5)
        let shown = Recorder<Int>()
        counter.observe(.value) { shown.add(($0.value as? Int) ?? -1) }
        #expect(try await shown.wait(for: 1) == [5])
        database.goOffline()
        let inputs = Recorder<Int>()
        let outcome = Recorder<String>()
        counter.runTransactionBlock({ data in
            inputs.add((data.value as? Int) ?? -1)
            data.value = ((data.value as? Int) ?? 0) + 1
            return TransactionResult.success(withValue: data)
        }) { error, committed, snapshot in
            outcome.add("\(error.map { "\($0)" } ?? "nil") \(committed) \(snapshot?.value.map { "\($0)" } ?? "nil")")
        }
        #expect(try await shown.wait(for: 2) == [5, 6], "the block's result shows at once, offline")
        #expect(inputs.all == [5])
        try await other.reference().child("local/offline-first").setValue(10)
        database.goOnline()
        #expect(try await outcome.wait(for: 1) == ["nil true 11"])
        #expect(inputs.all == [5, 10], "it runs again because the server's data differs")
        #expect(try await shown.wait(for: 3) == [5, 6, 11])
        try await Task.sleep(for: .milliseconds(200))
        #expect(shown.all == [5, 6, 11], "no flash back: \(shown.all)")

        // An abort on the data the client holds ends it at once, not committed.
        database.goOffline()
        let aborted = Recorder<String>()
        counter.runTransactionBlock({ _ in TransactionResult.abort() }) { error, committed, snapshot in
            aborted.add("\(error == nil) \(committed) \(snapshot?.value.map { "\($0)" } ?? "nil")")
        }
        #expect(try await aborted.wait(for: 1) == ["true false 11"])
        database.goOnline()
    }

    @Test func writesWaitAcrossADaemonRestartAndArriveInOrder() async throws {
        let database = self.database()
        let ref = database.reference().child("local/restart")
        try await ref.setValue(0)
        self.daemon.stop(graceful: true)
        let done = Recorder<Int>()
        for i in 1...20 { ref.child("n\(i)").setValue(i) { error, _ in if error == nil { done.add(i) } } }
        ref.child("last").setValue("x") { error, _ in if error == nil { done.add(99) } }
        try await Task.sleep(for: .milliseconds(300))
        #expect(done.all.isEmpty, "nothing is acknowledged while the daemon is down")
        try await self.daemon.start()
        let got = try await done.wait(for: 21, seconds: 20)
        #expect(got == Array(1...20) + [99], "completions come in the order the writes were made")
        let snapshot = try await ref.getData()
        #expect(snapshot.childrenCount == 21)
    }

    @Test func infoConnectedFollowsTheConnection() async throws {
        let database = Database.database(url: self.daemon.tcpURL)  // an instance not connected yet
        database.callbackQueue = self.queue
        let states = Recorder<Bool>()
        // Its first use (`reference`) connects, so the observer hears false then true, or true
        // alone when the connection was up before it was added (seen once in 25 suite runs).
        database.reference(withPath: ".info/connected").observe(.value) { states.add($0.value as? Bool ?? false) }
        let start = try await states.connectedStart()
        database.goOffline()
        _ = try await states.wait(for: start.count + 1)
        database.goOnline()
        try await database.reference().child("local/info").setValue(1)
        let got = try await states.wait(for: start.count + 2)
        #expect(got == start + [false, true])
    }

    @Test func changeSetsReportRealmIndicesAndKeyPathsFilterModifications() async throws {
        let scores = self.database().reference().child("local/scores")
        try await scores.setValue([
            "a": ["score": 1, "note": "x"], "b": ["score": 2, "note": "x"], "c": ["score": 3, "note": "x"],
        ])
        let changes = Recorder<String>()
        let token = scores.queryOrdered(byChild: "score").observe(keyPaths: ["score"]) { change in
            switch change {
            case .initial(let results): changes.add("initial \(results.keys)")
            case .update(let results, let deletions, let insertions, let modifications):
                changes.add("update \(results.keys) d\(deletions) i\(insertions) m\(modifications)")
            case .error(let error): changes.add("error \(error)")
            }
        }
        _ = try await changes.wait(for: 1)
        try await scores.child("b/note").setValue("y")  // not a key path: no notification
        try await scores.child("d").setValue(["score": 0, "note": "x"])
        try await scores.child("c").removeValue()
        try await scores.child("a/score").setValue(5)  // moves a to the end
        try await scores.child("b/score").setValue(2.5)  // stays in place, modified
        let got = try await changes.wait(for: 5)
        #expect(
            got == [
                "initial [\"a\", \"b\", \"c\"]",
                "update [\"d\", \"a\", \"b\", \"c\"] d[] i[0] m[]",
                "update [\"d\", \"a\", \"b\"] d[3] i[] m[]",
                "update [\"d\", \"b\", \"a\"] d[1] i[2] m[]",
                "update [\"d\", \"b\", \"a\"] d[] i[] m[1]",
            ], "\(got)")
        token.invalidate()
        try await scores.child("e").setValue(["score": 9])
        try await Task.sleep(for: .milliseconds(200))
        #expect(changes.all.count == 5, "nothing after invalidate()")
    }

    /// Realm: nil or an empty list is no filter, "meta.views" is a key path; and the filters of
    /// one collection's tokens do not filter exclusively ("If one key path change is satisfied
    /// for one notification token, then all notification token blocks for that object will
    /// execute"): with an unfiltered token beside it, a "meta.views" token hears every change.
    @Test func emptyOrDottedKeyPathsAsRealm() async throws {
        let items = self.database().reference().child("local/keypaths")
        try await items.setValue(["a": ["meta": ["views": 1, "likes": 1], "name": "x"]])
        let everything = Recorder<String>()
        let dotted = Recorder<String>()
        let all = items.observe(keyPaths: []) { everything.add(Self.describe($0)) }
        let views = items.observe(keyPaths: ["meta.views"]) { dotted.add(Self.describe($0)) }
        _ = try await everything.wait(for: 1)
        _ = try await dotted.wait(for: 1)
        try await items.child("a/name").setValue("y")  // only [] asks for it; both hear it
        try await items.child("a/meta/views").setValue(2)
        #expect(try await everything.wait(for: 3) == ["initial 1", "update d[] i[] m[0]", "update d[] i[] m[0]"])
        #expect(try await dotted.wait(for: 3) == ["initial 1", "update d[] i[] m[0]", "update d[] i[] m[0]"])
        // Without the unfiltered token, "meta.views" filters again.
        all.invalidate()
        try await items.child("a/name").setValue("z")
        try await items.child("a/meta/views").setValue(3)
        #expect(try await dotted.wait(for: 4) == ["initial 1", "update d[] i[] m[0]", "update d[] i[] m[0]", "update d[] i[] m[0]"])
        try await Task.sleep(for: .milliseconds(200))
        #expect(dotted.all.count == 4, "the name change alone raised an update: \(dotted.all)")
        withExtendedLifetime(views) {}
    }

    /// Realm's union of two filtered tokens on one collection: "name" and "age" tokens both hear
    /// a name change and both hear an age change; a "likes" change neither asked for is heard by
    /// neither.
    @Test func keyPathFiltersOfOneQueryAreNotExclusive() async throws {
        let dogs = self.database().reference().child("local/keypaths-union")
        try await dogs.setValue(["d1": ["name": "Rex", "age": 3, "likes": 0]])
        let names = Recorder<String>()
        let ages = Recorder<String>()
        let a = dogs.observe(keyPaths: ["name"]) { names.add(Self.describe($0)) }
        let b = dogs.observe(keyPaths: ["age"]) { ages.add(Self.describe($0)) }
        _ = try await names.wait(for: 1)
        _ = try await ages.wait(for: 1)
        try await dogs.child("d1/likes").setValue(1)
        try await dogs.child("d1/name").setValue("Max")
        try await dogs.child("d1/age").setValue(4)
        let expected = ["initial 1", "update d[] i[] m[0]", "update d[] i[] m[0]"]
        #expect(try await names.wait(for: 3) == expected)
        #expect(try await ages.wait(for: 3) == expected)
        try await Task.sleep(for: .milliseconds(200))
        #expect(names.all == expected && ages.all == expected, "the likes change raised an update: \(names.all) \(ages.all)")
        withExtendedLifetime((a, b)) {}
    }

    /// The union is per query object, as Realm's is per `Results` (each has its own notifier):
    /// an unfiltered token on another object of the same location does not widen a "name"
    /// token's filter, nor does a LiveResults with key paths on the same object (which still
    /// holds every change).
    @MainActor @Test func keyPathFiltersOfSeparateQueryObjectsAndLiveResultsStayApart() async throws {
        let database = self.database()
        let dogs = database.reference().child("local/keypaths-apart")
        try await dogs.setValue(["d1": ["name": "Rex", "likes": 0]])
        let names = Recorder<String>()
        let other = Recorder<String>()
        let a = dogs.observe(keyPaths: ["name"]) { names.add(Self.describe($0)) }
        let b = database.reference(withPath: "local/keypaths-apart").observe { other.add(Self.describe($0)) }
        let live = dogs.liveResults(keyPaths: ["name"])
        _ = try await names.wait(for: 1)
        _ = try await other.wait(for: 1)
        let deadline = Date().addingTimeInterval(15)
        while !live.isLoaded && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try await dogs.child("d1/likes").setValue(1)
        #expect(try await other.wait(for: 2) == ["initial 1", "update d[] i[] m[0]"], "the unfiltered token hears it")
        while (live.results.first?.childSnapshot(forPath: "likes").value as? Int) != 1 && Date() < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(live.results.first?.childSnapshot(forPath: "likes").value as? Int == 1, "LiveResults holds the newest data")
        try await dogs.child("d1/name").setValue("Max")
        #expect(try await names.wait(for: 2) == ["initial 1", "update d[] i[] m[0]"])
        try await Task.sleep(for: .milliseconds(200))
        #expect(names.all == ["initial 1", "update d[] i[] m[0]"], "the likes change reached the name token: \(names.all)")
        live.invalidate()
        withExtendedLifetime((a, b)) {}
    }

    /// Realm's frozen-results API on the immutable results a change set carries, and
    /// `write(withoutNotifying:)` with its default (no token silenced).
    @Test func resultsAreFrozenSnapshots() async throws {
        let database = self.database()
        let list = database.reference().child("local/frozen")
        try await list.setValue(["a": 1, "b": 2])
        let seen = Recorder<DatabaseResults>()
        let token = list.observe { change in
            if case .initial(let results) = change { seen.add(results) }
            if case .update(let results, _, _, _) = change { seen.add(results) }
        }
        let initial = try await seen.wait(for: 1)[0]
        #expect(initial.isFrozen && !initial.isInvalidated && initial.freeze().keys == ["a", "b"])
        database.write { list.child("c").setValue(3) }
        let updated = try await seen.wait(for: 2)[1]
        #expect(updated.keys == ["a", "b", "c"] && initial.keys == ["a", "b"], "a change set's results never change later")
        withExtendedLifetime(token) {}
    }

    static func describe(_ change: DatabaseCollectionChange) -> String {
        switch change {
        case .initial(let results): return "initial \(results.count)"
        case .update(_, let d, let i, let m): return "update d\(d) i\(i) m\(m)"
        case .error(let error): return "error \(error)"
        }
    }

    // Realm: no notification after invalidate(), even of change sets already queued.
    @Test func anActorObserverInvalidatedInItsBlockHearsNothingMore() async throws {
        actor Sink {
            // Blocked on purpose below: on its own thread, not one of the few the tests share.
            let executor = ThreadExecutor(label: "sink-invalidated")
            nonisolated var unownedExecutor: UnownedSerialExecutor { self.executor.asUnownedSerialExecutor() }
            var seen: [String] = []
            var token: NotificationToken?
            func keep(_ token: NotificationToken) { self.token = token }
            func take(_ change: DatabaseCollectionChange) {
                switch change {
                case .initial: self.seen.append("initial")
                case .update:
                    self.seen.append("update")
                    // Hold the actor while the other writes' change sets queue up behind it.
                    Thread.sleep(forTimeInterval: 0.3)
                    self.token?.invalidate()
                case .error: self.seen.append("error")
                }
            }
        }
        let ref = self.database().reference().child("local/actor-invalidate")
        let sink = Sink()
        let token = await ref.observe(on: sink) { sink, change in sink.take(change) }
        await sink.keep(token)
        while await sink.seen.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        for n in 0..<5 { ref.child("k\(n)").setValue(n, withCompletionBlock: { _, _ in }) }  // five change sets, queued together
        try await ref.child("last").setValue(true)
        try await Task.sleep(for: .milliseconds(300))
        let seen = await sink.seen
        #expect(seen == ["initial", "update"], "\(seen)")
    }

    /// Realm's invalidate(): nothing is delivered after it, also to an actor busy when it was
    /// called (a change set already waiting for the actor is dropped); it answers whether the
    /// token was still valid. And the actor form's token silences its observer in
    /// write(withoutNotifying:).
    @Test func anActorObserversTokenSilencesAndStopsIt() async throws {
        actor Sink {
            // Blocked on purpose below: on its own thread, not one of the few the tests share.
            let executor = ThreadExecutor(label: "sink-token")
            nonisolated var unownedExecutor: UnownedSerialExecutor { self.executor.asUnownedSerialExecutor() }
            var seen: [String] = []
            func take(_ change: DatabaseCollectionChange) {
                switch change {
                case .initial(let results): self.seen.append("initial \(results.count)")
                case .update(let results, _, let insertions, _): self.seen.append("update \(results.count) i\(insertions)")
                case .error: self.seen.append("error")
                }
            }
            func hold(started: Recorder<Bool>, until release: DispatchSemaphore) {
                started.add(true)
                release.wait()
            }
        }
        let database = self.database()
        let ref = database.reference().child("local/actor-token")
        let sink = Sink()
        let token = await ref.observe(on: sink) { sink, change in sink.take(change) }
        while await sink.seen.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        database.write(withoutNotifying: [token]) { ref.child("quiet").setValue(1) }
        try await ref.child("heard").setValue(2)
        while await sink.seen.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
        let silenced = await sink.seen
        #expect(silenced == ["initial 0", "update 2 i[0]"], "the silenced write is in the results, not reported")
        // The actor is busy while a change set arrives; invalidate() before it is free.
        let holding = Recorder<Bool>()
        let release = DispatchSemaphore(value: 0)
        let busy = Task { await sink.hold(started: holding, until: release) }
        _ = try await holding.wait(for: 1)
        try await ref.child("late").setValue(3)
        try await Task.sleep(for: .milliseconds(100))
        #expect(token.invalidate())
        #expect(!token.invalidate(), "invalidated already")
        release.signal()
        await busy.value
        try await Task.sleep(for: .milliseconds(100))
        let final = await sink.seen
        #expect(final.count == 2, "\(final)")
    }

    /// Realm's observe(_:) example: a write made right after observe, in the same turn, is in
    /// `.initial`, and `.update` is not called for it, also when another observer had loaded the
    /// location already (so its first value is at hand when the observer is added).
    @Test func aWriteRightAfterObserveIsInTheInitialResults() async throws {
        let database = self.database()
        let dogs = database.reference().child("local/dogs")
        try await dogs.child("fido").setValue(["age": 3])
        let loaded = Recorder<Int>()
        let other = dogs.observe(.value) { loaded.add(Int($0.childrenCount)) }
        _ = try await loaded.wait(for: 1)
        let seen = Recorder<String>()
        var token: NotificationToken?
        self.queue.sync {
            // On the callback queue, as a Realm app's main thread: nothing is delivered before
            // this turn ends.
            token = dogs.observe { change in
                switch change {
                case .initial(let results): seen.add("initial \(results.children.map(\.key))")
                case .update(let results, _, let insertions, _): seen.add("update \(results.count) i\(insertions)")
                case .error(let error): seen.add("error \(error)")
                }
            }
            dogs.child("rex").setValue(["age": 1])
        }
        #expect(try await seen.wait(for: 1) == ["initial [\"fido\", \"rex\"]"])
        try await dogs.child("spot").setValue(["age": 2])
        #expect(try await seen.wait(for: 2).last == "update 3 i[2]")
        withExtendedLifetime((token, other)) {}
    }

    /// A change set with its results' count, as the write(withoutNotifying:) tests compare them.
    static func describeCounted(_ change: DatabaseCollectionChange) -> String {
        switch change {
        case .initial(let results): return "initial \(results.count)"
        case .update(let results, let d, let i, let m): return "update \(results.count) d\(d) i\(i) m\(m)"
        case .error(let error): return "error \(error)"
        }
    }

    @Test func writeWithoutNotifyingSilencesOnlyThatToken() async throws {
        let database = self.database()
        let todos = database.reference().child("local/todos")
        let mine = Recorder<String>()
        let theirs = Recorder<String>()
        let myToken = todos.observe { mine.add(Self.describeCounted($0)) }
        let theirToken = todos.observe { theirs.add(Self.describeCounted($0)) }
        _ = try await mine.wait(for: 1)
        _ = try await theirs.wait(for: 1)
        database.write(withoutNotifying: [myToken]) {
            todos.child("t1").setValue("milk")
        }
        _ = try await theirs.wait(for: 2)
        try await todos.child("t2").setValue("eggs")
        let gotMine = try await mine.wait(for: 2)
        let gotTheirs = try await theirs.wait(for: 3)
        #expect(gotMine == ["initial 0", "update 2 d[] i[1] m[]"], "the silenced write is in the results, not reported: \(gotMine)")
        #expect(gotTheirs == ["initial 0", "update 1 d[] i[0] m[]", "update 2 d[] i[1] m[]"])
        withExtendedLifetime((myToken, theirToken)) {}
    }

    /// A silenced write holding a server value: when the server's value replaces the client's
    /// estimate, the silenced token only updates its copy; the other token hears the change.
    /// (The estimate and the server's time can agree to the millisecond: the write is repeated
    /// until the other token did hear a replacement.)
    @Test func writeWithoutNotifyingStaysSilentWhenTheServerValueReplacesTheEstimate() async throws {
        let database = self.database()
        let stamps = database.reference().child("local/stamps")
        let mine = Recorder<String>()
        let theirs = Recorder<String>()
        let myToken = stamps.observe { mine.add(Self.describeCounted($0)) }
        let theirToken = stamps.observe { theirs.add(Self.describeCounted($0)) }
        _ = try await mine.wait(for: 1)
        _ = try await theirs.wait(for: 1)
        var replaced = false
        var attempts = 0
        while !replaced, attempts < 10 {
            let attempt = attempts
            attempts += 1
            let before = theirs.all.count
            let written = Recorder<Bool>()
            database.write(withoutNotifying: [myToken]) {
                stamps.child("s\(attempt)").setValue(ServerValue.timestamp()) { _, _ in written.add(true) }
            }
            _ = try await written.wait(for: 1)
            // The other token's events of this write: its insertion, then a modification when
            // the server's time differed from the estimate.
            try await Task.sleep(for: .milliseconds(200))
            replaced = theirs.all.dropFirst(before).contains { $0.hasSuffix("i[] m[\(attempt)]") }
        }
        try #require(replaced, "the server's time never differed from the estimate: \(theirs.all)")
        try await stamps.child("z").setValue("heard")
        _ = try await mine.wait(for: 2)
        try await Task.sleep(for: .milliseconds(200))
        #expect(mine.all == ["initial 0", "update \(attempts + 1) d[] i[\(attempts)] m[]"], "only the unsilenced write is reported")
        withExtendedLifetime((myToken, theirToken)) {}
    }

    @Test func delegatesAndNotificationsHearEvents() async throws {
        let ref = self.database().reference().child("local/delegates")
        final class Listener: DatabaseObserverDelegate, @unchecked Sendable {
            let log = Recorder<String>()
            func query(_ query: DatabaseQuery, didReceive eventType: DataEventType, snapshot: DataSnapshot, previousSiblingKey: String?) {
                self.log.add("\(eventType == .childAdded ? "added" : "other") \(snapshot.key)")
            }
        }
        let first = Listener()
        var second: Listener? = Listener()
        let registry = DatabaseDelegateRegistry(query: ref, eventTypes: [.childAdded])
        registry.add(first)
        registry.add(second!)
        let direct = Listener()
        ref.addDelegate(direct, for: [.childAdded])
        let center = NotificationCenter()
        let posted = Recorder<String>()
        let observer = center.addObserver(forName: .databaseEvent, object: nil, queue: nil) { note in
            let snapshot = note.userInfo?[DatabaseNotificationKey.snapshot] as? DataSnapshot
            posted.add(snapshot?.key ?? "?")
        }
        ref.postNotifications(for: [.childAdded], to: center)
        try await ref.child("one").setValue(1)
        _ = try await first.log.wait(for: 1)
        _ = try await second!.log.wait(for: 1)
        second = nil  // held weakly: gone from the registry
        try await ref.child("two").setValue(2)
        #expect(try await first.log.wait(for: 2) == ["added one", "added two"])
        #expect(try await direct.log.wait(for: 2) == ["added one", "added two"])
        #expect(try await posted.wait(for: 2) == ["one", "two"])
        #expect(registry.delegates.count == 1)
        center.removeObserver(observer)
        registry.invalidate()
    }

    @Test func changesAsAnAsyncSequence() async throws {
        let ref = self.database().reference().child("local/sequence")
        let task = Task { () -> [String] in
            var seen: [String] = []
            for try await change in ref.changes() {
                switch change {
                case .initial(let results): seen.append("initial \(results.count)")
                case .update(let results, _, let insertions, _): seen.append("update \(results.count) i\(insertions)")
                case .error: seen.append("error")
                }
                if seen.count == 3 { break }
            }
            return seen
        }
        try await Task.sleep(for: .milliseconds(200))
        try await ref.child("a").setValue(1)
        try await ref.child("b").setValue(2)
        #expect(try await task.value == ["initial 0", "update 1 i[0]", "update 2 i[1]"])
    }
}

@Suite(.serialized) struct LiveResultsTests {
    @MainActor @Test func liveResultsFollowTheQueryOnTheMainActor() async throws {
        let daemon = try DaemonProcess()
        try await daemon.start()
        let database = Database.database(url: daemon.socketURL)  // callbacks on the main queue
        let ref = database.reference().child("live/items")
        try await ref.setValue(["b": 2, "a": 1])
        let live = ref.queryOrderedByValue().liveResults()
        let deadline = Date().addingTimeInterval(15)
        while !live.isLoaded && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        // Seen once in a full client run (not alone): not loaded after 15 s, loaded by the next write.
        #expect(live.results.map(\.key) == ["a", "b"], "loaded \(live.isLoaded), error \(live.error.map { "\($0)" } ?? "none")")
        try await ref.child("c").setValue(0)
        while live.results.count < 3 && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(live.results.map(\.key) == ["c", "a", "b"])
        live.invalidate()
    }

    // Realm's Results are live: keyPaths limit when views are told, never what they read.
    @MainActor @Test func liveResultsWithKeyPathsHoldTheNewestDataAndTellOnlyObservedChanges() async throws {
        let daemon = try DaemonProcess()
        try await daemon.start()
        let database = Database.database(url: daemon.socketURL)
        let ref = database.reference().child("live/people")
        try await ref.setValue(["p": ["name": "Ann", "age": 1]])
        let live = ref.liveResults(keyPaths: ["name"])
        let deadline = Date().addingTimeInterval(15)
        while !live.isLoaded && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let told = Recorder<Int>()
        func track() {
            withObservationTracking { _ = live.results } onChange: { told.add(1) }
        }
        track()
        try await ref.child("p/age").setValue(2)  // not observed: newest data, no redraw
        while (live.results.first?.childSnapshot(forPath: "age").value as? Int) != 2 && Date() < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(live.results.first?.childSnapshot(forPath: "age").value as? Int == 2)
        #expect(told.all.isEmpty, "a change outside keyPaths tells no view")
        try await ref.child("p/name").setValue("Bo")
        while told.all.isEmpty && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(told.all.count == 1)
        #expect(live.results.first?.childSnapshot(forPath: "name").value as? String == "Bo")
        live.invalidate()
    }
}

