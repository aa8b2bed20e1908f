// A transaction's first run, as Firebase's clients make it: at once, on what the client holds
// (null when nothing holds the location), its write sent at once with the ETag of what the block
// saw; a stale answer runs the block again on the server's data. Each case is one of Firebase's
// own transaction tests (FTransactionTest.m), over the native socket and over HTTP.

import Dispatch
import EddyClient
import Foundation
import Synchronization
import Testing

@Suite(.serialized) struct TransactionFirstRunTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.transaction.first-run.tests")

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    private func url(_ transport: String, _ namespace: String) -> String {
        transport == "http" ? self.daemon.httpURL + "/?ns=\(namespace)&transport=rest" : self.daemon.socketURL + "?ns=\(namespace)"
    }

    /// A fresh instance on its own namespace, over the native socket or HTTP.
    func database(_ transport: String, _ namespace: String) -> Database {
        Database.database(url: self.url(transport, namespace), callingBackOn: self.queue)
    }

    /// A second client of the same namespace: another app's instance, with its own connection
    /// and nothing loaded.
    func otherClient(_ transport: String, _ namespace: String) -> Database {
        let app = FirebaseApp.app(name: namespace) ?? {
            FirebaseApp.configure(name: namespace, options: FirebaseOptions(googleAppID: "1:1:ios:1", gcmSenderID: "1"))
            return FirebaseApp.app(name: namespace)!
        }()
        let database = Database.database(app: app, url: self.url(transport, namespace))
        database.callbackQueue = self.queue
        return database
    }

    /// testUseTransactionToCreateANodeMakeSureExactlyOneEventIsReceived: an observer added just
    /// before the transaction hears its value once, not the server's null first.
    @Test(arguments: ["socket", "http"]) func aTransactionCreatingANodeRaisesOneValueEvent(transport: String) async throws {
        let node = self.database(transport, "tx-one-event-\(transport)").reference().child("node/a")
        let values = Recorder<String>()
        node.observe(.value) { values.add("\($0.value ?? "nil")") }
        let seen = Recorder<String>()
        let (committed, snapshot) = try await node.runTransactionBlock { data in
            seen.add("\(data.value ?? "nil")")
            data.value = 42
            return TransactionResult.success(withValue: data)
        }
        #expect(committed && snapshot.value as? Int == 42)
        #expect(seen.all == ["<null>"], "one run, on null: \(seen.all)")
        try await Task.sleep(for: .milliseconds(300))
        #expect(values.all == ["42"], "exactly one value event: \(values.all)")
    }

    /// Firebase writes the value of the node the block hands back (`[result.update nodeValue]`):
    /// a child's data from `childData(byAppendingPath:)` becomes the location's new value.
    @Test(arguments: ["socket", "http"]) func successWithAChildsDataWritesThatChildsValue(transport: String) async throws {
        let node = self.database(transport, "tx-child-node-\(transport)").reference().child("t")
        try await node.setValue(["x": 1, "y": ["z": 2]])
        let (committed, snapshot) = try await node.runTransactionBlock { data in
            TransactionResult.success(withValue: data.childData(byAppendingPath: "y"))
        }
        #expect(committed && snapshot.value as? [String: Int] == ["z": 2], "\(snapshot)")
        let server = self.otherClient(transport, "tx-child-node-\(transport)").reference().child("t")
        #expect(try await server.getData().value as? [String: Int] == ["z": 2])
    }

    /// testTransactionSetSetWorks: the block sees null at once, its write is on its way before
    /// the two sets made right after, so it commits; the last set wins.
    @Test(arguments: ["socket", "http"]) func setsMadeRightAfterATransactionDoNotAbortIt(transport: String) async throws {
        let ref = self.database(transport, "tx-set-set-\(transport)").reference().child("node")
        let seen = Recorder<String>()
        let outcome = Recorder<String>()
        ref.runTransactionBlock({ data in
            seen.add("\(data.value ?? "nil")")
            data.value = "hi!"
            return TransactionResult.success(withValue: data)
        }) { error, committed, _ in outcome.add("\(error == nil ? "nil" : "\(error!)") \(committed)") }
        let setsDone = Recorder<String>()
        ref.setValue("foo") { error, _ in setsDone.add(error.map { "\($0)" } ?? "nil") }
        ref.setValue("bar") { error, _ in setsDone.add(error.map { "\($0)" } ?? "nil") }
        #expect(try await outcome.wait(for: 1) == ["nil true"])
        #expect(seen.all == ["<null>"])
        #expect(try await setsDone.wait(for: 2) == ["nil", "nil"])
        #expect(try await ref.getData().value as? String == "bar")
    }

    /// testSetShouldCancelSentTransactionsThatComeBackAsDatastale: another client wrote 5; this
    /// one holds nothing, so its block sees null and its write goes with null's ETag; a set of
    /// this client follows. The write comes back stale and the set aborts it: not committed, with
    /// Firebase's `set` error, and the set's value stays.
    @Test(arguments: ["socket", "http"]) func aSetAbortsASentTransactionThatComesBackStale(transport: String) async throws {
        let writer = self.database(transport, "tx-stale-set-\(transport)")
        try await writer.reference().child("node").setValue(5)
        let ref = self.otherClient(transport, "tx-stale-set-\(transport)").reference().child("node")
        let seen = Recorder<String>()
        let outcome = Recorder<String>()
        ref.runTransactionBlock({ data in
            seen.add("\(data.value ?? "nil")")
            data.value = 72
            return TransactionResult.success(withValue: data)
        }) { error, committed, _ in outcome.add("\((error as? DatabaseError)?.code.rawValue ?? "nil") \(committed)") }
        let setDone = Recorder<String>()
        ref.setValue(32) { error, _ in setDone.add(error.map { "\($0)" } ?? "nil") }
        #expect(try await outcome.wait(for: 1) == ["set false"])
        #expect(seen.all == ["<null>"], "aborted before a second run: \(seen.all)")
        #expect(try await setDone.wait(for: 1) == ["nil"])
        #expect(try await writer.reference().child("node").getData().value as? Int == 32)
    }

    /// The guide's counter on a location nothing holds: the first run sees null and writes 1,
    /// which comes back stale; the second run sees the server's 5 and writes 6.
    @Test(arguments: ["socket", "http"]) func aFirstRunOnNullIsRunAgainOnTheServersData(transport: String) async throws {
        let writer = self.database(transport, "tx-null-first-\(transport)")
        try await writer.reference().child("counter").setValue(5)
        let reader = self.otherClient(transport, "tx-null-first-\(transport)")
        let seen = Recorder<String>()
        let (committed, snapshot) = try await reader.reference().child("counter").runTransactionBlock { data in
            seen.add("\(data.value ?? "nil")")
            data.value = ((data.value as? Int) ?? 0) + 1
            return TransactionResult.success(withValue: data)
        }
        #expect(committed && snapshot.value as? Int == 6)
        #expect(seen.all == ["<null>", "5"])
        #expect(try await writer.reference().child("counter").getData().value as? Int == 6)
    }

    /// testPendingTransactionsAreCancelledOnDisconnect: a transaction whose write is on its way
    /// when the connection goes fails (not committed) and is neither run nor sent again once
    /// connected: applied before the loss, it would come back stale and run on its own result.
    @Test(arguments: ["socket", "http"]) func aTransactionWhoseWriteIsOnItsWayFailsWhenTheConnectionGoes(transport: String) async throws {
        let database = self.database(transport, "tx-cancel-on-disconnect-\(transport)")
        let ref = database.reference().child("node")
        try await ref.child("a").setValue("initial")
        let runs = Recorder<String>()
        let outcome = Recorder<String>()
        // eddyd is stopped from the first run on, so the write that follows it is surely on its
        // way, unanswered, when the connection goes (a loaded machine could otherwise put this
        // task off until eddyd had answered it).
        defer { self.daemon.signal(SIGCONT) }
        ref.child("b").runTransactionBlock({ data in
            if runs.all.isEmpty { self.daemon.pause() }
            runs.add("\(data.value ?? "nil")")
            data.value = "new"
            return TransactionResult.success(withValue: data)
        }) { error, committed, _ in outcome.add("\((error as? DatabaseError)?.code.rawValue ?? "nil") \(committed)") }
        _ = try await runs.wait(for: 1)
        try await Task.sleep(for: .milliseconds(100))  // the client sends the write that follows the run
        database.goOffline()
        #expect(try await outcome.wait(for: 1) == ["disconnected false"])
        self.daemon.signal(SIGCONT)
        database.goOnline()
        #expect(try await ref.child("a").getData().value as? String == "initial")
        try await Task.sleep(for: .milliseconds(300))
        #expect(runs.all == ["<null>"], "run once, not again: \(runs.all)")
    }

    /// testTransactionOnQueriedLocationDoesntRunInitiallyOnNull: a child in the window of a
    /// limited query is held whole, so a transaction on it runs first on its data, not on null.
    @Test(arguments: ["socket", "http"]) func aTransactionOnAChildOfAQueryRunsFirstOnItsData(transport: String) async throws {
        let list = self.database(transport, "tx-queried-\(transport)").reference().child("list")
        try await list.childByAutoId().setValue(["a": 1, "b": 2])
        let seen = Recorder<String>()
        let outcome = Recorder<String>()
        list.queryLimited(toFirst: 1).observe(.childAdded) { snapshot in
            snapshot.ref.runTransactionBlock({ data in
                seen.add(String(decoding: try! JSONSerialization.data(withJSONObject: data.value ?? NSNull(), options: [.sortedKeys, .fragmentsAllowed]), as: UTF8.self))
                data.value = nil
                return TransactionResult.success(withValue: data)
            }) { error, committed, snapshot in outcome.add("\(error == nil ? "nil" : "\(error!)") \(committed) \(snapshot?.value is NSNull)") }
        }
        #expect(try await outcome.wait(for: 1) == ["nil true true"])
        #expect(seen.all == [#"{"a":1,"b":2}"#], "one run, on the child's data: \(seen.all)")
    }

    /// The ETag the first run's write carries covers the priorities the client holds (the
    /// server's does, as Firebase's hash does): on a location held with a priority the block
    /// runs once, and a priority another client changed meanwhile sends it round again.
    @Test(arguments: ["socket", "http"]) func aFirstRunOnDataWithAPriorityCarriesItsETag(transport: String) async throws {
        let namespace = "tx-priority-\(transport)"
        let ref = self.database(transport, namespace).reference().child("ranked")
        try await ref.setValue(["n": 1], andPriority: 5)
        let values = Recorder<String>()
        ref.observe(.value) { values.add("\($0.value ?? "nil") \($0.priority ?? "nil")") }
        _ = try await values.wait(for: 1)
        let runs = Recorder<String>()
        let (committed, _) = try await ref.runTransactionBlock { data in
            runs.add("\(data.value ?? "nil") \(data.priority ?? "nil")")
            data.value = ["n": 2]
            return TransactionResult.success(withValue: data)
        }
        #expect(committed)
        #expect(runs.all.count == 1, "one run, its ETag current: \(runs.all)")

        let other = self.otherClient(transport, namespace).reference().child("ranked")
        let changedAtFirstRun = Recorder<String>()
        let secondRuns = Recorder<String>()
        let (again, snapshot) = try await ref.runTransactionBlock { data in
            secondRuns.add("\(data.priority ?? "nil")")
            if changedAtFirstRun.all.isEmpty {
                changedAtFirstRun.add("changed")
                // Another client changes only the priority before this run's write is sent.
                let done = DispatchSemaphore(value: 0)
                other.setPriority(9) { _, _ in done.signal() }
                done.wait()
            }
            data.value = ["n": 3]
            return TransactionResult.success(withValue: data)
        }
        #expect(again && snapshot.value as? [String: Int] == ["n": 3])
        // The first transaction wrote a value without a priority (which clears it, as
        // Firebase's MutableData does); the second runs on none, then again on the new one.
        #expect(secondRuns.all == ["<null>", "9"], "run again on the new priority: \(secondRuns.all)")
        #expect(try await other.getData().value as? [String: Int] == ["n": 3])
    }

    /// A transaction queued behind another runs its block at once on what the client shows; if
    /// its turn comes while that run is still in the block, the block is not run a second time
    /// beside it: the run in progress is sent when it returns (one run, never two at once).
    @Test(arguments: ["socket", "http"]) func aTurnComingDuringTheQueuedRunDoesNotRunTheBlockTwiceAtOnce(transport: String) async throws {
        let ref = self.database(transport, "tx-overlap-\(transport)").reference().child("count")
        try await ref.setValue(1)
        let values = Recorder<String>()
        ref.observe(.value) { values.add("\($0.value ?? "nil")") }
        _ = try await values.wait(for: 1)
        let outcomes = Recorder<String>()
        final class Inside: Sendable {
            let counts = Mutex((now: 0, max: 0))
        }
        let inside = Inside()
        let runs = Recorder<String>()
        DispatchQueue.global().async {
            let firstDone = DispatchSemaphore(value: 0)
            ref.runTransactionBlock({ data in
                data.value = (data.value as? Int ?? 0) + 1
                return TransactionResult.success(withValue: data)
            }) { error, committed, _ in
                outcomes.add("first \(error == nil) \(committed)")
                firstDone.signal()
            }
            ref.runTransactionBlock({ data in
                inside.counts.withLock { counts in
                    counts.now += 1
                    counts.max = max(counts.max, counts.now)
                }
                runs.add("\(data.value ?? "nil")")
                if runs.all.count == 1 {
                    // Still in the block while the first transaction ends and this one's turn comes.
                    _ = firstDone.wait(timeout: .now() + 30)
                    Thread.sleep(forTimeInterval: 0.3)
                }
                inside.counts.withLock { $0.now -= 1 }
                data.value = (data.value as? Int ?? 0) + 10
                return TransactionResult.success(withValue: data)
            }) { error, committed, snapshot in outcomes.add("second \(error == nil) \(committed) \(snapshot?.value ?? "nil")") }
        }
        let got = try await outcomes.wait(for: 2)
        #expect(got == ["first true true", "second true true 12"])
        #expect(inside.counts.withLock { $0.max } == 1, "the block ran twice at once: \(runs.all)")
        #expect(runs.all == ["2"], "one run, on the first one's shown result: \(runs.all)")
        #expect(try await ref.getData().value as? Int == 12)
    }
}
