// EddyClient against a real eddyd over the Unix socket and TCP, written the way the Firebase
// Apple SDK's guides write it (only the import and the URL differ): writes with completion
// blocks and async, child events with previous keys, value events, queries with Firebase's
// order and errors, transactions under contention, and observers that survive a daemon restart
// without a missed or repeated event.

import Dispatch
import EddyClient
import Foundation
import Testing

@Suite(.serialized) struct DatabaseClientTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.client.tests")

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    func database(tcp: Bool = false) -> Database {
        let database = Database.database(url: tcp ? self.daemon.tcpURL : self.daemon.socketURL)
        database.callbackQueue = self.queue
        return database
    }

    @Test(arguments: [false, true]) func setThenGetRoundTripsFoundationValues(tcp: Bool) async throws {
        let ref = self.database(tcp: tcp).reference().child("users/ada")
        let written = try await ref.setValue(["name": "Ada", "age": 36, "admin": true, "score": 2.5, "tags": ["x", "y"]] as [String: Any])
        #expect(written.key == "ada")
        let snapshot = try await ref.getData()
        #expect(snapshot.exists())
        let value = try #require(snapshot.value as? [String: Any])
        #expect(value["name"] as? String == "Ada")
        #expect(value["age"] as? Int == 36)
        #expect(value["admin"] as? Bool == true)
        #expect(value["score"] as? Double == 2.5)
        #expect(value["tags"] as? [String] == ["x", "y"])
        #expect(snapshot.childSnapshot(forPath: "name").value as? String == "Ada")
        #expect(snapshot.hasChild("tags/1"))
        #expect(snapshot.childrenCount == 5)
        let missing = try await ref.child("nothing").getData()
        #expect(!missing.exists() && missing.value is NSNull)
    }

    // FIRDatabaseTests testPersistenceEnabled / testPersistenceCacheSizeBytes: the settings read
    // back as set (10 MB by default) and are fixed once a reference initialized the instance.
    @Test func persistenceSettingsReadBackAndFreezeAtTheFirstReference() throws {
        let database = Database.database(url: self.daemon.socketURL + "?ns=persistence-settings")
        #expect(database.isPersistenceEnabled == false)
        #expect(database.persistenceCacheSizeBytes == 10 * 1024 * 1024)
        database.isPersistenceEnabled = true
        database.persistenceCacheSizeBytes = 2 * 1024 * 1024
        #expect(database.isPersistenceEnabled)
        #expect(database.persistenceCacheSizeBytes == 2 * 1024 * 1024)
        _ = database.reference()
        database.persistenceCacheSizeBytes = 3 * 1024 * 1024
        database.isPersistenceEnabled = false
        #expect(database.persistenceCacheSizeBytes == 2 * 1024 * 1024, "fixed once initialized")
        #expect(database.isPersistenceEnabled)
    }

    @Test func completionBlocksReportSuccessAndRefusals() async throws {
        let ref = self.database().reference()
        let outcomes = Recorder<String>()
        ref.child("ok").setValue(1) { error, ref in outcomes.add("\(error == nil) \(ref.key ?? "")") }
        ref.child("bad.key").setValue(1) { error, _ in outcomes.add("\(error.map { "\($0)" } ?? "nil")") }
        // Answers come as each is decided: the refusal may come before the durable write.
        let got = try await outcomes.wait(for: 2).sorted()
        #expect(got[1] == "true ok")
        #expect(got[0].contains("invalid_value") && got[0].contains("bad.key"), "the refusal names the key: \(got[0])")
        #expect(try await ref.child("bad.key").parent!.child("ok").getData().value as? Int == 1)
    }

    @Test func childByAutoIdSortsInCreationOrderAndUpdatesAreAtomic() async throws {
        let posts = self.database().reference().child("posts")
        var keys: [String] = []
        for i in 0..<20 {
            let post = posts.childByAutoId()
            keys.append(post.key!)
            try await post.setValue(["n": i])
        }
        #expect(keys == keys.sorted(), "push ids increase")
        let snapshot = try await posts.getData()
        let order = (snapshot.children.allObjects as! [DataSnapshot]).map(\.key)
        #expect(order == keys)
        try await posts.updateChildValues(["\(keys[0])/n": 100, "\(keys[1])": NSNull(), "count": ServerValue.increment(5)])
        try await posts.updateChildValues(["count": ServerValue.increment(2), "at": ServerValue.timestamp()])
        let after = try await posts.getData()
        #expect(after.childSnapshot(forPath: "\(keys[0])/n").value as? Int == 100)
        #expect(!after.hasChild(keys[1]))
        #expect(after.childSnapshot(forPath: "count").value as? Int == 7)
        let at = try #require(after.childSnapshot(forPath: "at").value as? Double)
        #expect(abs(at / 1000 - Date().timeIntervalSince1970) < 60)
    }

    @Test func childEventsCarryPreviousKeysAndValueFollows() async throws {
        let database = self.database()
        let other = Database.database(url: self.daemon.tcpURL)  // another connection writes
        let list = database.reference().child("list")
        try await list.setValue(["b": 2, "a": 1])
        let events = Recorder<String>()
        let added = list.observe(.childAdded, andPreviousSiblingKeyWith: { snapshot, previous in
            events.add("added \(snapshot.key)=\(snapshot.value as? Int ?? -1) after \(previous ?? "nil")")
        })
        let values = Recorder<[String]>()
        let value = list.observe(.value) { snapshot in
            values.add((snapshot.children.allObjects as! [DataSnapshot]).map { "\($0.key)=\($0.value as? Int ?? -1)" })
        }
        _ = try await events.wait(for: 2)
        _ = try await values.wait(for: 1)
        try await other.reference().child("list/c").setValue(3)
        let changed = Recorder<String>()
        let removed = Recorder<String>()
        list.observe(.childChanged) { changed.add("\($0.key)=\($0.value as? Int ?? -1)") }
        list.observe(.childRemoved) { removed.add($0.key) }
        try await other.reference().child("list/a").setValue(10)
        try await other.reference().child("list/b").removeValue()
        #expect(try await events.wait(for: 3) == ["added a=1 after nil", "added b=2 after a", "added c=3 after b"])
        #expect(try await changed.wait(for: 1) == ["a=10"])
        #expect(try await removed.wait(for: 1) == ["b"])
        let lastValues = try await values.wait(for: 4)
        #expect(lastValues.first == ["a=1", "b=2"])
        #expect(lastValues.last == ["a=10", "c=3"])
        list.removeObserver(withHandle: added)
        list.removeObserver(withHandle: value)
        list.removeAllObservers()
        try await other.reference().child("list/d").setValue(4)
        try await Task.sleep(for: .milliseconds(300))
        #expect(events.all.count == 3, "no event after removeObserver")
    }

    @Test func removeAllObserversOnAQueryRemovesOnlyThatQuerysObservers() async throws {
        let database = self.database()
        let list = database.reference().child("scoped")
        let heard = Recorder<String>()
        list.observe(.childAdded) { heard.add("ref \($0.key)") }
        let firstTwo = list.queryOrderedByKey().queryLimited(toFirst: 2)
        firstTwo.observe(.childAdded) { heard.add("first2 \($0.key)") }
        let lastOne = list.queryOrderedByKey().queryLimited(toLast: 1)
        lastOne.observe(.childAdded) { heard.add("last1 \($0.key)") }
        try await list.child("a").setValue(1)
        _ = try await heard.wait(for: 3)
        firstTwo.removeAllObservers()  // only the limitToFirst(2) observer
        try await list.child("b").setValue(2)
        let after = try await heard.wait(for: 5)
        #expect(Set(after.dropFirst(3)) == ["ref b", "last1 b"], "\(after)")
        list.removeAllObservers()  // a reference: every observer at the location
        try await list.child("c").setValue(3)
        try await Task.sleep(for: .milliseconds(300))
        #expect(heard.all.count == 5, "\(heard.all)")
    }

    /// Firebase's FOrderByTests testCallbackRemovalWorks: a handle removed through a reference
    /// goes whatever query it observes; through another query of the same location, or through
    /// another location, it stays.
    @Test func aHandleIsRemovedThroughItsLocationOrItsOwnQuery() async throws {
        let database = self.database()
        let ref = database.reference().child("removal")
        let heard = Recorder<String>()
        let foo = ref.queryOrdered(byChild: "foo").observe(.value) { heard.add("foo \($0.value as? Int ?? -1)") }
        let bar = ref.queryOrdered(byChild: "bar").observe(.value) { heard.add("bar \($0.value as? Int ?? -1)") }
        let plain = ref.observe(.value) { heard.add("plain \($0.value as? Int ?? -1)") }
        try await ref.setValue(1)
        _ = try await heard.wait(for: 3)
        ref.queryOrdered(byChild: "foo").removeObserver(withHandle: bar)  // another query: stays
        ref.child("x").removeObserver(withHandle: plain)  // another location: stays
        ref.queryOrdered(byChild: "foo").removeObserver(withHandle: foo)  // its own query: goes
        try await ref.setValue(2)
        let afterTwo = try await heard.wait(for: 5)
        #expect(Set(afterTwo.dropFirst(3)) == ["bar 2", "plain 2"], "\(afterTwo)")
        ref.removeObserver(withHandle: bar)  // the location itself: goes, whatever its query
        try await ref.setValue(3)
        let afterThree = try await heard.wait(for: 6)
        #expect(afterThree.last == "plain 3")
        ref.removeObserver(withHandle: plain)
        try await ref.setValue(4)
        try await Task.sleep(for: .milliseconds(300))
        #expect(heard.all.count == 6, "\(heard.all)")
    }

    @Test func queriesOrderByNestedChildAndLimit() async throws {
        try await self.daemon.putRules(#"{"rules": {".read": true, ".write": true, "top": {".indexOn": ["metrics/views", "title"]}}}"#)
        let posts = self.database().reference().child("top")
        for (key, views) in [("p1", 5), ("p2", 50), ("p3", 20), ("p4", 1)] {
            try await posts.child(key).setValue(["title": key, "metrics": ["views": views]])
        }
        let top = posts.queryOrdered(byChild: "metrics/views").queryLimited(toLast: 2)
        let snapshot = try await top.getData()
        #expect((snapshot.children.allObjects as! [DataSnapshot]).map(\.key) == ["p3", "p2"])
        let window = Recorder<[String]>()
        top.observe(.value) { window.add(($0.children.allObjects as! [DataSnapshot]).map(\.key)) }
        #expect(try await window.wait(for: 1).last == ["p3", "p2"])
        try await posts.child("p4/metrics/views").setValue(100)
        #expect(try await window.wait(for: 2).last == ["p2", "p4"])
        let byKey = try await posts.queryOrderedByKey().queryStarting(atValue: "p2").queryEnding(beforeValue: "p4").getData()
        #expect((byKey.children.allObjects as! [DataSnapshot]).map(\.key) == ["p2", "p3"])
        let equal = try await posts.queryOrdered(byChild: "title").queryEqual(toValue: "p1").getData()
        #expect((equal.children.allObjects as! [DataSnapshot]).map(\.key) == ["p1"])
    }

    /// The index a live query needs is removed from the rules: eddyd ends the listen (a `cancel`
    /// event), and the view subscribes again, is refused for the missing index and evaluates
    /// the query itself, so its observers keep hearing another client's writes (they were
    /// left without events over the native protocol, and cancelled as if denied over HTTP).
    @Test(arguments: ["unix", "http"]) func aQueryWhoseIndexIsRemovedKeepsItsObservers(transport: String) async throws {
        try await self.daemon.putRules(#"{"rules": {".read": true, ".write": true, "dropidx": {"$t": {".indexOn": "n"}}}}"#)
        let database = transport == "unix" ? self.database() : Database.database(url: self.daemon.restURL, callingBackOn: self.queue)
        let list = database.reference().child("dropidx/\(transport)")
        try await list.setValue(["a": ["n": 3], "b": ["n": 1], "c": ["n": 2]])
        let window = Recorder<[String]>()
        list.queryOrdered(byChild: "n").queryLimited(toFirst: 2).observe(.value) { snapshot in
            window.add((snapshot.children.allObjects as! [DataSnapshot]).map(\.key))
        } withCancel: { error in
            window.add(["cancel \(error)"])
        }
        #expect(try await window.wait(for: 1) == [["b", "c"]])
        try await self.daemon.putRules(#"{"rules": {".read": true, ".write": true}}"#)
        let other = Database.database(url: self.daemon.tcpURL)
        try await other.reference().child("dropidx/\(transport)/a/n").setValue(0)
        let deadline = Date().addingTimeInterval(30)
        while window.all.last != ["a", "b"], Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(window.all.last == ["a", "b"], "\(window.all)")
        #expect(!window.all.contains { $0.first?.hasPrefix("cancel") == true }, "\(window.all)")
    }

    /// Firebase's default order once a query has bounds is priority order; Eddy stores no
    /// priorities, so every child's is null: a null bound narrows by key, a non-null start
    /// selects nothing (FIRDatabaseQueryTests testIntegerKeysBehaveNumerically1,
    /// testSetLimitsWithStartAt). These were refused ("priorities are not supported yet").
    @Test(arguments: [false, true]) func priorityBoundsSelectAsIfEveryPriorityWereNull(tcp: Bool) async throws {
        let ref = self.database(tcp: tcp).reference().child("priority-bounds-\(tcp)")
        try await ref.setValue(["1": true, "50": true, "550": true, "6": true, "600": true, "70": true, "8": true, "80": true])
        func keys(_ query: DatabaseQuery) async throws -> [String] {
            (try await query.getData().children.allObjects as! [DataSnapshot]).map(\.key)
        }
        #expect(try await keys(ref.queryOrderedByPriority().queryStarting(atValue: nil, childKey: "80")) == ["80", "550", "600"])
        #expect(try await keys(ref.queryStarting(atValue: nil, childKey: "8").queryLimited(toFirst: 2)) == ["8", "50"])
        #expect(try await keys(ref.queryEnding(atValue: nil, childKey: "8")) == ["1", "6", "8"])
        #expect(try await keys(ref.queryStarting(afterValue: nil, childKey: "550")) == ["600"])
        #expect(try await keys(ref.queryStarting(atValue: 1)) == [], "every null priority is before 1")
        #expect(try await keys(ref.queryEnding(atValue: "z").queryLimited(toLast: 2)) == ["550", "600"])
        // FIRDatabaseQueryTests testInvalidQueryParams: a boolean is no priority.
        for invalid in [ref.queryOrderedByPriority().queryStarting(atValue: true), ref.queryEnding(beforeValue: false)] {
            await #expect(throws: DatabaseError.self) { _ = try await invalid.getData() }
        }
        // Live: the window follows writes in key order within the bounds.
        let window = Recorder<[String]>()
        ref.queryStarting(atValue: nil, childKey: "80").queryLimited(toFirst: 2).observe(.value) { snapshot in
            window.add((snapshot.children.allObjects as! [DataSnapshot]).map(\.key))
        } withCancel: { window.add(["cancelled: \($0)"]) }
        #expect(try await window.wait(for: 1) == [["80", "550"]])
        try await ref.child("100").setValue(true)
        #expect(try await window.wait(for: 2).last == ["80", "100"])
    }

    /// FOrderByTests testCallbackRemovalWorks: a query with only an order loads all the data, as
    /// Firebase's does: on a primitive its value is the primitive, and it follows changes; on an
    /// object, every child in the order (no index needed).
    @Test func aQueryWithOnlyAnOrderHasTheLocationsValue() async throws {
        let ref = self.database().reference().child("order-only")
        try await ref.setValue(1)
        let values = Recorder<String>()
        ref.queryOrdered(byChild: "foo").observe(.value) { snapshot in
            if let children = snapshot.children.allObjects as? [DataSnapshot], !children.isEmpty {
                values.add(children.map(\.key).joined(separator: ","))
            } else {
                values.add("\(snapshot.value ?? "nil")")
            }
        }
        #expect(try await values.wait(for: 1) == ["1"])
        try await ref.setValue(2)
        #expect(try await values.wait(for: 2).last == "2")
        try await ref.setValue(["a": ["foo": 3], "b": ["foo": 1], "c": ["foo": 2]])
        #expect(try await values.wait(for: 3).last == "b,c,a")
        #expect(try await ref.queryOrdered(byChild: "foo").getData().children.allObjects.map { ($0 as! DataSnapshot).key } == ["b", "c", "a"])
        try await ref.setValue("text")
        #expect(try await ref.queryOrderedByKey().getData().value as? String == "text")
    }

    @Test func unindexedQueriesAreEvaluatedOnTheClientAsFirebaseDoes() async throws {
        let posts = self.database().reference().child("unindexed")
        for (key, stars) in [("a", 3), ("b", 1), ("c", 2)] { try await posts.child(key).setValue(["stars": stars]) }
        let top = posts.queryOrdered(byChild: "stars").queryLimited(toLast: 2)
        #expect((try await top.getData().children.allObjects as! [DataSnapshot]).map(\.key) == ["c", "a"])
        let events = Recorder<String>()
        top.observe(.childAdded, andPreviousSiblingKeyWith: { events.add("added \($0.key) after \($1 ?? "nil")") })
        top.observe(.childRemoved) { events.add("removed \($0.key)") }
        top.observe(.childMoved, andPreviousSiblingKeyWith: { events.add("moved \($0.key) after \($1 ?? "nil")") })
        let windows = Recorder<[String]>()
        top.observe(.value) { windows.add(($0.children.allObjects as! [DataSnapshot]).map(\.key)) }
        _ = try await events.wait(for: 2)
        #expect(try await windows.wait(for: 1) == [["c", "a"]])
        try await posts.child("b/stars").setValue(10)  // b enters at the top, c leaves
        try await posts.child("c/stars").setValue(20)  // c comes back above b; a leaves
        // Observers of one query share its view: for each change, removed before added.
        let all = try await events.wait(for: 6)
        #expect(all == ["added c after nil", "added a after c", "removed c", "added b after a", "removed a", "added c after b"])
        #expect(try await windows.wait(for: 3).last == ["b", "c"])
    }

    /// Right after rules declare an index, eddyd builds it; a query that needs it waits for the
    /// build (at most 5 s) and is then refused ("still building"). Firebase's indexes are never
    /// unavailable, so the client evaluates the query itself instead of failing, as for an
    /// undeclared index. The build is slowed here (100 children per step, 1 s apart) so that it
    /// outlasts the wait.
    @Test func aQueryWhileItsIndexBuildsIsAnsweredAnyway() async throws {
        self.daemon.stop()
        try await self.daemon.start(["--index-build-chunk", "100", "--index-build-pause-ms", "1000"])
        var children: [String: Any] = [:]
        for i in 0..<1000 { children[String(format: "k%04d", i)] = ["n": (i * 7919) % 1000] }
        let location = self.database().reference().child("building")
        try await location.setValue(children)
        try await self.daemon.putRules(#"{"rules": {".read": true, ".write": true, "building": {".indexOn": "n"}}}"#)
        let window = Recorder<[Int]>()
        location.queryOrdered(byChild: "n").queryStarting(atValue: 10).queryLimited(toFirst: 2).observe(.value) { snapshot in
            window.add((snapshot.children.allObjects as! [DataSnapshot]).compactMap { ($0.value as? [String: Any])?["n"] as? Int })
        } withCancel: { _ in window.add([-1]) }
        let top = try await location.queryOrdered(byChild: "n").queryLimited(toLast: 3).getData()
        #expect((top.children.allObjects as! [DataSnapshot]).compactMap { ($0.value as? [String: Any])?["n"] as? Int } == [997, 998, 999])
        #expect(try await window.wait(for: 1, seconds: 30).first == [10, 11])
    }

    /// FTransactionTest testSetCancelsPendingTransaction: a set at /node/foo aborts this client's
    /// transactions at and above it that have not been written yet (Firebase's "set" error).
    /// Made offline: the one on /node/foo ran at once and its write waits for the connection,
    /// ahead of the set, so it keeps its outcome (testTransactionSetSetWorks); the one on /node,
    /// queued behind it, was not written yet and is aborted. An update elsewhere aborts nothing
    /// (testUpdateShouldNotCancelUnrelatedTransactions).
    @Test func aSetAbortsThisClientsTransactionsAroundIt() async throws {
        let database = Database.database(url: self.daemon.socketURL + "?ns=tx-set-aborts")
        database.callbackQueue = self.queue
        database.goOffline()
        let node = database.reference().child("node")
        let outcomes = Recorder<String>()
        func run(_ ref: DatabaseReference, _ name: String, _ value: Any) {
            ref.runTransactionBlock({ data in
                data.value = value
                return TransactionResult.success(withValue: data)
            }) { error, committed, _ in outcomes.add("\(name) \(committed) \((error as? DatabaseError)?.code.rawValue ?? "-")") }
        }
        run(node.child("foo"), "foo", 42)
        run(node, "node", ["foo": 84, "bar": 1])
        let other = database.reference().child("elsewhere")
        run(other.child("a"), "elsewhere", 1)
        other.updateChildValues(["b": 2]) { _, _ in }
        node.child("foo").setValue(0) { _, _ in }
        database.goOnline()
        let all = Set(try await outcomes.wait(for: 3))
        #expect(all == ["foo true -", "node false set", "elsewhere true -"], "\(all)")
        #expect(try await node.getData().value as? [String: Int] == ["foo": 0])
        #expect(try await other.getData().value as? [String: Int] == ["a": 1, "b": 2])
    }

    /// Many transactions from one client on one location (a button tapped fast) all commit:
    /// they run one after another, as Firebase's clients send them, instead of making each other
    /// retry until some give up. Transactions elsewhere run beside them.
    @Test func manyTransactionsOfOneClientOnOneLocationAllCommit() async throws {
        let database = self.database()
        let counter = database.reference().child("tapped/count")
        let elsewhere = database.reference().child("tapped-elsewhere/count")
        let outcomes = Recorder<Bool>()
        for ref in [counter, elsewhere] {
            for _ in 0..<40 {
                ref.runTransactionBlock({ data in
                    data.value = ((data.value as? Int) ?? 0) + 1
                    return TransactionResult.success(withValue: data)
                }) { error, committed, _ in outcomes.add(error == nil && committed) }
            }
        }
        let all = try await outcomes.wait(for: 80)
        #expect(all.allSatisfy { $0 }, "\(all.filter { !$0 }.count) of 80 did not commit")
        #expect(try await counter.getData().value as? Int == 40)
        #expect(try await elsewhere.getData().value as? Int == 40)
    }

    @Test func aLaterObserverHearsTheInitialEventsAndValueComesAfterTheChildEvents() async throws {
        let list = self.database().reference().child("later")
        try await list.setValue(["x": 1, "y": 2])
        let heard = Recorder<String>()
        list.observe(.value) { heard.add("value \($0.childrenCount)") }
        _ = try await heard.wait(for: 1)
        list.observe(.childAdded) { heard.add("added \($0.key)") }
        #expect(try await heard.wait(for: 3) == ["value 2", "added x", "added y"])
        try await list.child("z").setValue(3)
        #expect(try await heard.wait(for: 5).suffix(2) == ["added z", "value 3"], "child events before value")
        let moved = Recorder<String>()
        let byValue = list.queryOrderedByValue()
        byValue.observe(.childMoved, andPreviousSiblingKeyWith: { moved.add("moved \($0.key) after \($1 ?? "nil")") })
        try await Task.sleep(for: .milliseconds(200))
        try await list.child("x").setValue(10)
        #expect(try await moved.wait(for: 1) == ["moved x after z"])
    }

    @Test func asyncSequencesDeliverAndEndingTheLoopRemovesTheObserver() async throws {
        let chat = self.database().reference().child("chat")
        let writer = Database.database(url: self.daemon.tcpURL)
        writer.callbackQueue = DispatchQueue(label: "writer")
        let reader = Task {
            var keys: [String] = []
            for try await snapshot in chat.events(.childAdded) {
                keys.append(snapshot.key)
                if keys.count == 3 { break }
            }
            return keys
        }
        for key in ["m1", "m2", "m3"] { try await writer.reference().child("chat").child(key).setValue(key) }
        #expect(try await reader.value == ["m1", "m2", "m3"])
        var seen: [Int] = []
        for try await snapshot in chat.queryOrderedByKey().values() {
            seen.append(Int(snapshot.childrenCount))
            if seen.count == 1 { try await writer.reference().child("chat/m4").setValue("m4") }
            if snapshot.childrenCount == 4 { break }
        }
        #expect(seen.first == 3 && seen.last == 4)
        await #expect(throws: DatabaseError.self) {
            for try await _ in chat.queryLimited(toFirst: 1).queryLimited(toFirst: 2).events(.value) {}
        }
    }

    @Test func invalidQueriesReportFirebasesMessage() async throws {
        let ref = self.database().reference().child("q")
        await #expect(throws: DatabaseError.self) { try await ref.queryOrderedByKey().queryOrderedByValue().getData() }
        do {
            _ = try await ref.queryLimited(toFirst: 1).queryLimited(toLast: 1).getData()
            Issue.record("a second limit must fail")
        } catch let error as DatabaseError {
            #expect(error.code == .invalidQuery)
            #expect(error.message == "Can't call queryLimitedToLast: if a limit was previously set")
        }
        for (query, message) in [
            (
                ref.queryOrdered(byChild: "s").queryStarting(atValue: 1).queryEqual(toValue: 2),
                "Can't call queryEqualToValue: after queryStartingAtValue, queryStartingAfterValue, queryEndingAtValue, queryEndingBeforeValue or queryEqualToValue was previously called"
            ),
            (ref.queryLimited(toFirst: 1 << 31), "Limit must be less than 2,147,483,648"),
            (ref.queryLimited(toLast: 0), "Limit can't be zero"),
            // FIRDatabaseQueryTests testInvalidKeys: a bound's child key is checked as a key.
            (
                ref.queryStarting(atValue: nil, childKey: ".test"),
                "(queryStartingAtValue:childKey:) Must be a non-empty string and not contain '/' '.' '#' '$' '[' or ']'"
            ),
            (
                ref.queryOrdered(byChild: "s").queryEnding(beforeValue: 1, childKey: "th/ing"),
                "(queryEndingBeforeValue:childKey:) Must be a non-empty string and not contain '/' '.' '#' '$' '[' or ']'"
            ),
            (
                ref.queryOrdered(byChild: "s").queryEqual(toValue: 1, childKey: "fo$o"),
                "(queryEqualToValue:childKey:) Must be a non-empty string and not contain '/' '.' '#' '$' '[' or ']'"
            ),
            // firebase-js-sdk query.test.ts "Passing invalid paths to orderBy throws"; FValidation's
            // validPathString in iOS.
            (ref.queryOrdered(byChild: "$child/foo"), "(queryOrderedByChild:) Must be a non-empty string and not contain '.' '#' '$' '[' or ']'"),
            (ref.queryOrdered(byChild: "a.b"), "(queryOrderedByChild:) Must be a non-empty string and not contain '.' '#' '$' '[' or ']'"),
            (ref.queryOrdered(byChild: "a/b[0]"), "(queryOrderedByChild:) Must be a non-empty string and not contain '.' '#' '$' '[' or ']'"),
            (ref.queryOrdered(byChild: "$key"), "(queryOrderedByChild:) $key is invalid.  Use queryOrderedByKey: instead."),
        ] {
            do {
                _ = try await query.getData()
                Issue.record("must fail: \(message)")
            } catch let error as DatabaseError {
                #expect(error.code == .invalidQuery && error.message == message, "\(error)")
            }
        }
        let cancelled = Recorder<String>()
        ref.queryOrderedByKey().queryStarting(atValue: 1).observe(.value, with: { _ in }, withCancel: { cancelled.add("\($0)") })
        #expect(try await cancelled.wait(for: 1)[0].contains("non-string types"))
    }

    /// FTransactionTest testTransactionAbortsAfter25Retries: a transaction that always loses
    /// its compare-and-set runs its block 25 times, then fails with maxretry, not committed.
    @Test func aTransactionThatAlwaysLosesGivesUpAfter25Runs() async throws {
        let ref = self.database().reference().child("losing")
        let other = Database.database(url: self.daemon.tcpURL)
        other.callbackQueue = DispatchQueue(label: "other-writer")
        let otherRef = other.reference().child("losing")
        let runs = Recorder<Int>()
        let outcome = Recorder<String>()
        ref.runTransactionBlock({ data in
            runs.add(runs.all.count)
            // Another client changes the data before this run's write arrives.
            let written = DispatchSemaphore(value: 0)
            otherRef.setValue(UUID().uuidString) { _, _ in written.signal() }
            written.wait()
            data.value = "mine"
            return TransactionResult.success(withValue: data)
        }) { error, committed, _ in
            outcome.add("\((error as? DatabaseError)?.code.rawValue ?? "nil") \(committed)")
        }
        #expect(try await outcome.wait(for: 1, seconds: 30) == ["maxretry false"])
        #expect(runs.all.count == 25)
    }

    @Test func transactionsRetryUnderContention() async throws {
        let counter = self.database().reference().child("counter")
        let other = Database.database(url: self.daemon.tcpURL)
        other.callbackQueue = DispatchQueue(label: "other")
        let otherCounter = other.reference().child("counter")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for ref in [counter, otherCounter] {
                group.addTask {
                    for _ in 0..<20 {
                        let (committed, _) = try await ref.runTransactionBlock { data in
                            data.value = ((data.value as? Int) ?? 0) + 1
                            return TransactionResult.success(withValue: data)
                        }
                        #expect(committed)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await counter.getData().value as? Int == 40)
        // As in Firebase, the first run is on what the client holds, and nothing holds the
        // counter here: the block sees null and its abort answers that.
        let (committed, snapshot) = try await counter.runTransactionBlock { _ in TransactionResult.abort() }
        #expect(!committed && snapshot.value is NSNull)
        // Firebase's inherited TransactionResult() is no success either: nothing is written.
        let (plain, _) = try await counter.runTransactionBlock { data in
            data.value = 41
            return TransactionResult()
        }
        #expect(!plain)
        #expect(try await counter.getData().value as? Int == 40)
        // No data reads as NSNull, as in Firebase (`if currentData.value is NSNull`).
        let seen = Recorder<String>()
        let (created, _) = try await self.database().reference().child("counter-new").runTransactionBlock { data in
            seen.add(data.value is NSNull ? "null" : "\(data.value ?? "nil")")
            data.value = 1
            return TransactionResult.success(withValue: data)
        }
        let first = try await seen.wait(for: 1).first
        #expect(created && first == "null")
    }

    @Test func observersResumeAcrossADaemonRestartWithoutGapsOrRepeats() async throws {
        let database = self.database()
        let feed = database.reference().child("feed")
        let seen = Recorder<String>()
        feed.observe(.childAdded) { seen.add($0.key) }
        for i in 0..<5 { try await feed.child(String(format: "k%02d", i)).setValue(i) }
        _ = try await seen.wait(for: 5)
        self.daemon.stop(graceful: false)
        try await self.daemon.start()
        // Writes from another process while the observer reconnects.
        let writer = Database.database(url: self.daemon.tcpURL)
        writer.callbackQueue = DispatchQueue(label: "writer")
        for i in 5..<10 { try await writer.reference().child("feed").child(String(format: "k%02d", i)).setValue(i) }
        let all = try await seen.wait(for: 10, seconds: 30)
        #expect(all == (0..<10).map { String(format: "k%02d", $0) })
        try await Task.sleep(for: .milliseconds(300))
        #expect(seen.all.count == 10, "no event repeated: \(seen.all)")
    }
}

@Suite struct DefaultCallbackQueueTests {
    @Test func callbacksArriveOnTheMainQueueByDefault() async throws {
        let daemon = try DaemonProcess()
        try await daemon.start()
        let ref = Database.database(url: daemon.socketURL).reference().child("main")
        // On Linux the main queue may be drained by a thread other than the process's first,
        // so the queue is recognised by a specific value, not Thread.isMainThread.
        let key = DispatchSpecificKey<String>()
        DispatchQueue.main.setSpecific(key: key, value: "main")
        let onMain = { DispatchQueue.getSpecific(key: key) == "main" }
        let seen = Recorder<String>()
        ref.setValue("x") { error, _ in seen.add("write \(error == nil) main \(onMain())") }
        _ = try await seen.wait(for: 1)
        ref.observe(.value) { snapshot in seen.add("value \(snapshot.value as? String ?? "-") main \(onMain())") }
        let got = try await seen.wait(for: 2)
        #expect(got.contains("write true main true"), "\(got)")
        #expect(got.contains("value x main true"), "\(got)")
    }
}
