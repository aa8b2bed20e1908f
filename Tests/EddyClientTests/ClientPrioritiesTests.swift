// Priorities as the Swift client reads them, against a real eddyd: `DataSnapshot.priority`
// (NSNull when none), children in priority order by default, child_moved and child_changed
// when only a priority changes, `valueInExportFormat()`, and `MutableData.priority` in a
// transaction. Written from Firebase's documented behaviour (and its Apple SDK's integration
// tests, FOrder and FData): each check looks at the writer's own view and at a second client's.

import Dispatch
import EddyClient
import Foundation
import Testing

@Suite(.serialized) struct ClientPrioritiesTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.client.priorities.tests")

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    // Static, so observer blocks do not capture the suite: a Database instance lives for the
    // process, and an observer left on it would keep the suite's daemon running after the tests.
    private static func keys(_ snapshot: DataSnapshot) -> [String] {
        (snapshot.children.allObjects as? [DataSnapshot] ?? []).map(\.key)
    }

    private static func values(_ snapshot: DataSnapshot) -> [Int] {
        (snapshot.children.allObjects as? [DataSnapshot] ?? []).compactMap { $0.value as? Int }
    }

    /// Children pushed with descending priorities list in priority order, in the writer's view
    /// and in another client's read.
    @Test func pushedChildrenListInPriorityOrder() async throws {
        let writer = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        let ref = writer.reference().child("prio/pushed")
        let seen = Recorder<[Int]>()
        let handle = ref.observe(.value) { seen.add(Self.values($0)) }
        let written = Recorder<String>()
        for i in 0..<10 {  // not awaited: local events first
            ref.childByAutoId().setValue(i, andPriority: 10 - i) { error, _ in written.add(error.map { "\($0)" } ?? "ok") }
        }
        let expected = Array((0..<10).reversed())
        _ = try await seen.wait(for: 1)
        let deadline = Date().addingTimeInterval(60)
        while seen.all.last != expected, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(seen.all.last == expected, "\(seen.all)")
        ref.removeObserver(withHandle: handle)
        #expect(try await written.wait(for: 10).allSatisfy { $0 == "ok" })

        let reader = Database.database(url: self.daemon.httpURL, callingBackOn: self.queue)
        let read = try await reader.reference().child("prio/pushed").getData()
        #expect(Self.values(read) == expected)
        let rest = Database.database(url: self.daemon.restURL, callingBackOn: self.queue)
        #expect(Self.values(try await rest.reference().child("prio/pushed").getData()) == expected, "over REST (format=export)")
    }

    /// Firebase's priority order: no priority first, then numbers ascending, then strings,
    /// ties by key (FOrder testVerifyOrderOfMixedNumbersStringNoPriorities).
    @Test func mixedPrioritiesOrder() async throws {
        let database = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        let ref = database.reference().child("prio/mixed")
        let pairs: [(String, (any Sendable)?)] = [
            ("alpha42", "zed"), ("noPriorityC", nil), ("num41", 500), ("noPriorityB", nil), ("num80", 4000.1),
            ("num50", 4000), ("num10", 24), ("alpha41", "zed"), ("alpha20", "horse"), ("num20", 123), ("num70", 4000.01),
            ("noPriorityA", nil), ("alpha30", "tree"), ("num30", 300), ("num60", 4000.001), ("alpha10", "0horse"),
            ("num42", 500), ("alpha40", "zed"), ("num40", 500),
        ]
        for (key, priority) in pairs { try await ref.child(key).setValue(1, andPriority: priority) }
        let expected = [
            "noPriorityA", "noPriorityB", "noPriorityC", "num10", "num20", "num30", "num40", "num41", "num42", "num50", "num60", "num70",
            "num80", "alpha10", "alpha20", "alpha30", "alpha40", "alpha41", "alpha42",
        ]
        #expect(Self.keys(try await ref.getData()) == expected)
        let parent = try await database.reference().child("prio").getData()
        #expect(Self.keys(parent.childSnapshot(forPath: "mixed")) == expected, "a child snapshot lists its children by priority too")
        let other = Database.database(url: self.daemon.httpURL, callingBackOn: self.queue)
        let seen = Recorder<[String]>()
        let handle = other.reference().child("prio/mixed").observe(.value) { seen.add(Self.keys($0)) }
        #expect(try await seen.wait(for: 1).first == expected)
        other.reference().child("prio/mixed").removeObserver(withHandle: handle)
    }

    /// A priority-only change moves the child: child_moved, child_changed, value (FOrder
    /// testChildMovedEventWhenPriorityChanges, testCanResetPriorityToNull), heard by the
    /// writer and by another client; the snapshot's priority is then NSNull.
    @Test func aPriorityChangeMovesTheChild() async throws {
        let writer = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        let listener = Database.database(url: self.daemon.httpURL, callingBackOn: self.queue)
        let rest = Database.database(url: self.daemon.restURL, callingBackOn: self.queue)  // format=export streams
        let path = "prio/moved"
        try await writer.reference().child(path).child("a").setValue("first", andPriority: 1)
        try await writer.reference().child(path).child("b").setValue("second", andPriority: 2)
        try await writer.reference().child(path).child("c").setValue("third", andPriority: 3)
        var recorders: [Recorder<String>] = []
        for database in [writer, listener, rest] {
            let events = Recorder<String>()
            let ref = database.reference().child(path)
            ref.observe(.childAdded) { events.add("added \($0.key) \($1 ?? "nil")") }
            ref.observe(.childMoved) { events.add("moved \($0.key) \($1 ?? "nil")") }
            ref.observe(.childChanged) { events.add("changed \($0.key) \($0.priority.map { "\($0)" } ?? "nil")") }
            ref.observe(.value) { events.add("value \(Self.keys($0).joined(separator: ","))") }
            #expect(try await events.wait(for: 4) == ["added a nil", "added b a", "added c b", "value a,b,c"])
            recorders.append(events)
        }
        try await writer.reference().child(path).child("a").setPriority(15)
        for events in recorders {
            #expect(Array(try await events.wait(for: 7).suffix(3)) == ["moved a c", "changed a 15", "value b,c,a"])
        }
        try await writer.reference().child(path).child("b").setPriority(nil)
        for events in recorders {
            #expect(Array(try await events.wait(for: 10).suffix(3)) == ["moved b nil", "changed b <null>", "value b,c,a"])
        }
        let single = Recorder<String>()
        listener.reference().child(path).child("b").observeSingleEvent(of: .value) { single.add("\(type(of: $0.priority!))") }
        #expect(try await single.wait(for: 1).first?.contains("NSNull") == true)
        #expect(try await listener.reference().child(path).child("c").getData().priority as? Int == 3)
    }

    /// Writing below a leaf with a priority keeps the priority (FOrder
    /// testInsertingANodeUnderALeafPreservesItsPriority); the export form shows every priority.
    @Test func aLeafsPriorityOutlivesAChildWrittenBelowIt() async throws {
        let database = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        let ref = database.reference().child("prio/leaf")
        let last = Recorder<DataSnapshot>()
        ref.observe(.value) { last.add($0) }
        let written = Recorder<String>()
        ref.setValue("a", andPriority: 10) { error, _ in written.add(error.map { "\($0)" } ?? "ok") }
        ref.child("deeper").setValue("deeper") { error, _ in written.add(error.map { "\($0)" } ?? "ok") }
        let deadline = Date().addingTimeInterval(60)
        while (last.all.last?.value as? [String: String]) != ["deeper": "deeper"], Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(last.all.last?.priority as? Int == 10)
        #expect(try await written.wait(for: 2) == ["ok", "ok"])
        let other = Database.database(url: self.daemon.httpURL, callingBackOn: self.queue)
        let read = try await other.reference().child("prio/leaf").getData()
        #expect(read.priority as? Int == 10 && read.value as? [String: String] == ["deeper": "deeper"])
        let exported = try #require(read.valueInExportFormat() as? [String: Any])
        #expect(exported[".priority"] as? Int == 10 && exported["deeper"] as? String == "deeper" && exported.count == 2)

        try await ref.child("deeper").setValue("d", andPriority: "p")
        let leaf = try await other.reference().child("prio/leaf").getData()
        let leafExport = try #require(leaf.valueInExportFormat() as? [String: Any])
        #expect((leafExport["deeper"] as? [String: Any])?[".priority"] as? String == "p")
        #expect(leaf.childSnapshot(forPath: "deeper").priority as? String == "p")
        #expect(leaf.childSnapshot(forPath: "deeper").value as? String == "d")
        #expect(leaf.childrenCount == 1 && leaf.hasChild("deeper") && !leaf.hasChild(".priority"))
    }

    /// A transaction reads the node's priority and may set it; what it writes keeps it.
    @Test func aTransactionReadsAndSetsThePriority() async throws {
        let database = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        let ref = database.reference().child("prio/counter")
        try await ref.setValue(1, andPriority: 7)
        let seenPriority = Recorder<String>()
        let result = try await ref.runTransactionBlock { data in
            seenPriority.add("\(data.priority ?? "nil")")
            data.value = ((data.value as? Int) ?? 0) + 1
            data.priority = 8
            return .success(withValue: data)
        }
        #expect(result.0 && result.1.value as? Int == 2 && result.1.priority as? Int == 8)
        #expect(seenPriority.all.last == "7", "\(seenPriority.all)")
        let other = Database.database(url: self.daemon.httpURL, callingBackOn: self.queue)
        let read = try await other.reference().child("prio/counter").getData()
        #expect(read.value as? Int == 2 && read.priority as? Int == 8)
    }

    /// Without an order a query is a priority query (Firebase's default index): a limit alone,
    /// bounds alone, read and live; an update may name `.priority` members.
    @Test func queriesWithoutAnOrderArePriorityQueries() async throws {
        let database = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        let ref = database.reference().child("prio/default")
        try await ref.setValue(["a": 1, "b": 2, "c": 3])
        try await ref.updateChildValues(["a/.priority": 3, "b/.priority": 1])
        try await ref.child("c").updateChildValues([".priority": 2])
        #expect(Self.keys(try await ref.getData()) == ["b", "c", "a"])
        #expect(Self.keys(try await ref.queryLimited(toFirst: 2).getData()) == ["b", "c"])
        #expect(Self.keys(try await ref.queryStarting(atValue: 2).getData()) == ["c", "a"])
        let other = Database.database(url: self.daemon.httpURL, callingBackOn: self.queue)
        let last = Recorder<[String]>()
        let handle = other.reference().child("prio/default").queryLimited(toLast: 1).observe(.value) { last.add(Self.keys($0)) }
        #expect(try await last.wait(for: 1) == [["a"]])
        try await ref.child("b").setPriority(10)
        #expect(try await last.wait(for: 2).last == ["b"], "b's new priority moves it to the end")
        other.reference().child("prio/default").removeObserver(withHandle: handle)
    }

    /// The priority a snapshot reports, write after write, in the writer's own view (FData
    /// testGetPriorityReturnsCorrectType, testExportValIncludesPriorities).
    @Test func theSnapshotPriorityFollowsEachWrite() async throws {
        let database = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        let ref = database.reference().child("prio/types")
        let seen = Recorder<String>()
        ref.observe(.value) { snapshot in
            guard snapshot.exists() else { return }
            seen.add("\(snapshot.value ?? "nil") \(snapshot.priority.map { "\($0)" } ?? "nil")")
        }
        let writes: [(Any, String)] = [
            ("a", "a <null>"), ([".value": "e", ".priority": 8], "e 8"), ([".value": "f", ".priority": "8"], "f 8"),
            ([".value": "g", ".priority": NSNull()], "g <null>"),
        ]
        func shows(_ expected: String) async throws {
            let deadline = Date().addingTimeInterval(60)
            while seen.all.last != expected, Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
            #expect(seen.all.last == expected, "\(seen.all)")
        }
        for (value, expected) in writes {
            ref.setValue(value) { _, _ in }
            try await shows(expected)
        }
        ref.setValue("b", andPriority: 5) { _, _ in }
        try await shows("b 5")
        #expect(seen.all == writes.map(\.1) + ["b 5"], "one event per write, nothing in between")
        let contents: [String: Any] = ["foo": ["bar": [".value": 5, ".priority": 7], ".priority": "hi"]]
        let exported = Recorder<String>()
        ref.observe(.value) { snapshot in
            if let export = snapshot.valueInExportFormat() as? NSDictionary, export.isEqual(to: contents) { exported.add("same") }
        }
        try await ref.setValue(contents)
        #expect(try await exported.wait(for: 1) == ["same"])
        let other = Database.database(url: self.daemon.httpURL, callingBackOn: self.queue)
        let read = try await other.reference().child("prio/types").getData()
        #expect((read.valueInExportFormat() as? NSDictionary)?.isEqual(to: contents) == true, "\(read.valueInExportFormat() ?? "nil")")
    }

    /// A priority set shows at once; a later observer sees it (FData
    /// testEffectsOfSetPriorityIsImmediatelyEvident); a set replaces the priorities at and below
    /// it (testSetOverwritesPriorityOfTopLevelNodeAndSubnodes); a priority on a location without
    /// data fails (testSetPriorityOnNonexistentNodeFails).
    @Test func setPriorityShowsAtOnceAndASetClearsIt() async throws {
        let database = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        let ref = database.reference().child("prio/evident")
        let seen = Recorder<String>()
        ref.observeSingleEvent(of: .value) { seen.add("\($0.value ?? "nil") \($0.priority.map { "\($0)" } ?? "nil")") }
        ref.setValue(5) { _, _ in }
        ref.setPriority(10) { _, _ in }
        ref.observe(.value) { seen.add("\($0.value ?? "nil") \($0.priority.map { "\($0)" } ?? "nil")") }
        #expect(Array(try await seen.wait(for: 2).prefix(2)) == ["5 <null>", "5 10"])
        // Another client hears the location's own priority change, and the writer keeps it once
        // eddyd has answered.
        let other = Database.database(url: self.daemon.httpURL, callingBackOn: self.queue)
        let heard = Recorder<String>()
        other.reference().child("prio/evident").observe(.value) { heard.add("\($0.value ?? "nil") \($0.priority.map { "\($0)" } ?? "nil")") }
        func hears(_ expected: String) async throws {  // the writer's writes above were not awaited
            let deadline = Date().addingTimeInterval(60)
            while heard.all.last != expected, Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
            #expect(heard.all.last == expected, "\(heard.all)")
        }
        try await hears("5 10")
        try await ref.setPriority(11)
        try await hears("5 11")
        let deadline = Date().addingTimeInterval(60)
        while seen.all.last != "5 11", Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(200))
        #expect(seen.all.last == "5 11", "the writer's view after the answer: \(seen.all)")

        let writer = database.reference().child("prio/overwritten")
        writer.setValue(["a": 5]) { _, _ in }
        writer.setPriority(10) { _, _ in }
        writer.child("a").setPriority(18) { _, _ in }
        try await writer.setValue(["a": 7])
        let reader = Database.database(url: self.daemon.httpURL, callingBackOn: self.queue)
        let read = try await reader.reference().child("prio/overwritten").getData()
        #expect(read.priority is NSNull && read.childSnapshot(forPath: "a").priority is NSNull && read.value as? [String: Int] == ["a": 7])

        let failed = Recorder<String>()
        database.reference().child("prio/nothing-here").setPriority(5) { error, _ in failed.add(error == nil ? "ok" : "failed") }
        #expect(try await failed.wait(for: 1) == ["failed"])
        #expect(try await reader.reference().child("prio/nothing-here").getData().exists() == false)
    }

    /// Server values as priorities (FData testServerTimestampSetWithPriorityRemoteEvents and
    /// LocalEvents, testServerIncrementPriorityOnline): one timestamp for the whole write, an
    /// increment adding to the old priority; the writer's local events first, then nothing more.
    @Test func serverValuesAsPriorities() async throws {
        let writer = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        let ref = writer.reference().child("prio/server-values")
        let data: [String: Any] = [
            "a": ServerValue.timestamp(), "b": [".value": ServerValue.timestamp(), ".priority": ServerValue.timestamp()],
        ]
        let local = Recorder<DataSnapshot>()
        ref.observe(.value) { if $0.exists() { local.add($0) } }
        let done = Recorder<String>()
        ref.setValue(data, andPriority: ServerValue.timestamp()) { error, _ in done.add(error.map { "\($0)" } ?? "ok") }
        #expect(try await done.wait(for: 1) == ["ok"], "\(done.all)")
        let reader = Database.database(url: self.daemon.httpURL, callingBackOn: self.queue)
        for snapshot in [try #require(local.all.first), try await reader.reference().child("prio/server-values").getData()] {
            let value = try #require(snapshot.value as? [String: Any])
            let priority = try #require(snapshot.priority as? NSNumber)
            #expect(abs(Date().timeIntervalSince1970 * 1000 - priority.doubleValue) < 60_000)
            #expect(value["a"] as? NSNumber == priority && value["b"] as? NSNumber == priority)
            #expect(snapshot.childSnapshot(forPath: "b").priority as? NSNumber == priority)
        }

        let counter = writer.reference().child("prio/increment")
        let found = Recorder<String>()
        counter.observe(.value) { found.add("\($0.priority ?? "nil")") }
        _ = try await found.wait(for: 1)
        counter.setValue(0, andPriority: ServerValue.increment(1)) { _, _ in }
        counter.setValue(0, andPriority: ServerValue.increment(1.5)) { _, _ in }
        #expect(Array(try await found.wait(for: 3).suffix(2)) == ["1", "2.5"])
        try await Task.sleep(for: .milliseconds(300))
        #expect(found.all.count == 3, "the server's events change nothing shown: \(found.all)")
        #expect(try await reader.reference().child("prio/increment").getData().priority as? Double == 2.5)
    }

    /// A set that changes priorities moves children: removed, added, then moved (FEventTests
    /// "removed c, removed f, added aa, added bb, moved a, moved e").
    @Test func aSetThatReordersChildrenMovesThem() async throws {
        let database = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        let node = database.reference().child("prio/reordered")
        let events = Recorder<String>()
        node.observe(.childAdded) { events.add("added \($0.key)") }
        node.observe(.childRemoved) { events.add("removed \($0.key)") }
        node.observe(.childMoved) { events.add("moved \($0.key)") }
        func ranked(_ priorities: [String: Int]) -> [String: Any] { priorities.mapValues { [".value": 1, ".priority": $0] } }
        try await node.setValue(ranked(["a": 0, "b": 1, "c": 2, "d": 3, "e": 4, "f": 5]))
        let before = try await events.wait(for: 6).count
        try await node.setValue(ranked(["a": 5, "aa": 0, "b": 1, "bb": 2, "d": 3, "e": 6]))
        let after = Array(try await events.wait(for: before + 6).dropFirst(before))
        #expect(after == ["removed c", "removed f", "added aa", "added bb", "moved a", "moved e"])
    }

    /// An onDisconnect write with a priority: the writer's own view shows it when its
    /// connection ends, and another client sees it from eddyd (FRealtime
    /// testOnDisconnectSetWithPriorityWorks).
    @Test func anOnDisconnectSetWithAPriority() async throws {
        let writer = Database.database(url: self.daemon.socketURL, callingBackOn: self.queue)
        let reader = Database.database(url: self.daemon.httpURL, callingBackOn: self.queue)
        let path = "prio/presence/disconnected"
        let seen = Recorder<String>()
        for (name, database) in [("writer", writer), ("reader", reader)] {
            database.reference().child(path).observe(.value) { snapshot in
                seen.add("\(name) \(snapshot.value ?? "nil") \(snapshot.priority ?? "nil")")
            }
        }
        _ = try await seen.wait(for: 2)
        try await writer.reference().child(path).onDisconnectSetValue(true, andPriority: "abcd")
        writer.goOffline()
        defer { writer.goOnline() }
        let deadline = Date().addingTimeInterval(60)
        while !(seen.all.contains("writer 1 abcd") && seen.all.contains("reader 1 abcd")), Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(seen.all.contains("writer 1 abcd") && seen.all.contains("reader 1 abcd"), "\(seen.all)")
    }
}
