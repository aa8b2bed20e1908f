// The fallback transport: the same API over REST and SSE (`http://host:port`, and Firebase's
// `useEmulator(withHost:port:)` pointed at eddyd's HTTP listener), against a real eddyd.

import Dispatch
import EddyClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

@Suite(.serialized) struct HTTPTransportTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.client.http")

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    func database() -> Database {
        let database = Database.database(url: self.daemon.restURL)
        database.callbackQueue = self.queue
        return database
    }

    /// A client of its own over REST through a `TCPProxy` in front of eddyd's HTTP listener.
    func proxiedDatabase(_ label: String) throws -> (TCPProxy, Database) {
        let proxy = try TCPProxy(to: self.daemon.httpURL)
        let database = Database.database(url: proxy.restURL)
        database.callbackQueue = DispatchQueue(label: "eddy.client.http.\(label)")
        return (proxy, database)
    }

    /// FData.m testWriteAndReadData and testSetAndThenListenForValueEventsAreCorrect: a value
    /// set and then observed (no observer before) comes back as the first and only value event:
    /// the new view shows the waiting write at once. Over HTTP the view's stream could start
    /// before the write (another connection) was applied and show null first.
    @Test func aValueSetThenObservedIsTheFirstEvent() async throws {
        let base = self.database().reference().child("http/set-then-observe")
        for i in 0..<20 {
            let node = base.child("n\(i)")
            node.setValue(42) { _, _ in }
            let values = Recorder<String>()
            let handle = node.observe(.value) { values.add("\($0.value ?? "nil")") }
            let once = Recorder<String>()
            node.observeSingleEvent(of: .value) { once.add("\($0.value ?? "nil")") }
            #expect(try await once.wait(for: 1) == ["42"])
            try await Task.sleep(for: .milliseconds(50))
            #expect(values.all == ["42"], "run \(i): \(values.all)")
            node.removeObserver(withHandle: handle)
        }
    }

    /// firebase-js-sdk order.test.ts "Push a bunch of data, reconnect, read it back": ten pushes
    /// made without waiting, then a one-time read; once it answers, a plain GET reads all ten,
    /// as Firebase's listen goes after the writes made before it on its one connection. (The
    /// read's stream started at once, on its own connection, and was answered while most of
    /// the writes still waited: another client saw one to four.)
    @Test func aReadMadeAfterWritesIsAnsweredOnceTheyAreApplied() async throws {
        let writer = self.database().reference().child("http/pushes-then-read")
        for i in 0..<10 { writer.childByAutoId().setValue(i) { _, _ in } }
        let mineCount = Recorder<UInt>()
        writer.observeSingleEvent(of: .value) { mineCount.add($0.childrenCount) }
        #expect(try await mineCount.wait(for: 1) == [10])
        let (body, _) = try await URLSession.shared.data(from: URL(string: self.daemon.httpURL + "/http/pushes-then-read.json?shallow=true")!)
        let read = try JSONSerialization.jsonObject(with: body) as? [String: Any]
        #expect(read?.count == 10, "\(String(decoding: body, as: UTF8.self))")
    }

    /// FEventTests testChildAddedPerf1's body: a burst of pushes under child observers. The
    /// writes are answered on their own connection well before the view's stream delivers them
    /// (seconds behind under such a burst): each stays shown until the stream passes it, so
    /// no child is removed and added again.
    @Test func aStreamBehindItsWritesRemovesNothing() async throws {
        let list = self.database().reference().child("http/burst")
        let added = Recorder<String>()
        let removed = Recorder<String>()
        list.observe(.childAdded) { added.add($0.key) }
        list.observe(.childRemoved) { removed.add($0.key) }
        let count = 1000
        let answered = Recorder<Bool>()
        for i in 0..<count { list.childByAutoId().setValue(["n": i]) { error, _ in answered.add(error == nil) } }
        let answers = try await answered.wait(for: count, seconds: 120)
        #expect(answers.allSatisfy { $0 })
        // Past the grace period with the stream caught up.
        try await Task.sleep(for: .seconds(3))
        #expect(try await list.getData().childrenCount == UInt(count))
        #expect(removed.all.isEmpty, "\(removed.all.count) children removed and added again")
        #expect(added.all.count == count)
    }

    /// The same, made certain: the view's stream is held back (a proxy keeps eddyd's bytes)
    /// while the writes are answered, for longer than the quiet-stream grace. The writes stay
    /// shown, as the view's copy lacks them, and the stream's events, released, remove nothing.
    @Test func aStreamHeldBackPastTheGraceRemovesNothing() async throws {
        let (proxy, database) = try self.proxiedDatabase("held-stream")
        let list = database.reference().child("http/held")
        let added = Recorder<String>()
        let removed = Recorder<String>()
        let loaded = Recorder<Bool>()
        list.observe(.childAdded) { added.add($0.key) }
        list.observe(.childRemoved) { removed.add($0.key) }
        list.observeSingleEvent(of: .value) { _ in loaded.add(true) }
        _ = try await loaded.wait(for: 1)
        proxy.holdStreams()
        let answered = Recorder<Bool>()
        for i in 0..<3 { list.childByAutoId().setValue(["n": i]) { error, _ in answered.add(error == nil) } }
        #expect(try await answered.wait(for: 3).allSatisfy { $0 })
        try await Task.sleep(for: .seconds(3.5))  // past the 2 s grace
        #expect(removed.all.isEmpty, "taken back while the stream was held: \(removed.all)")
        proxy.releaseStreams()
        try await Task.sleep(for: .milliseconds(500))
        #expect(removed.all.isEmpty, "removed once the stream came: \(removed.all)")
        #expect(added.all.count == 3, "\(added.all)")
        database.goOffline()
    }

    #if canImport(FoundationNetworking)
        /// On Linux every stream (an observer's, the onDisconnect connection's) is the second
        /// request on its connection, after eddyd's status (`SSEStream`): a stream that opened
        /// its own connection would keep a writability source in swift-corelibs-foundation and
        /// about 0.8 of a core busy while idle. The events still arrive.
        @Test func aStreamRunsOnAConnectionOpenedBeforeIt() async throws {
            let (proxy, database) = try self.proxiedDatabase("warm-up")
            let node = database.reference().child("http/warm-up")
            let values = Recorder<String>()
            node.observe(.value) { values.add("\($0.value ?? "nil")") }
            _ = try await values.wait(for: 1)
            try await node.child("gone").onDisconnectRemoveValue()
            try await node.setValue(7)
            #expect(try await values.wait(for: 2).last == "7")
            let connections = proxy.requestLines
            let streams = connections.filter { lines in
                lines.contains { $0.hasPrefix("GET /http/warm-up.json") || $0.hasPrefix("GET /.ondisconnect.json") }
            }
            #expect(streams.count == 2, "\(connections)")
            for lines in streams {
                #expect(lines.count == 2 && lines[0].hasPrefix("GET /.status.json"), "\(connections)")
            }
            database.goOffline()
        }
    #endif

    /// FData.m testOnAfterSetWaitsForLatestData: a write answered before any observer is not
    /// shown again to an observer added later, over data another client changed meanwhile.
    @Test func anAnsweredWriteIsNotShownToALaterObserver() async throws {
        let node = self.database().reference().child("http/answered-then-changed")
        try await node.setValue(5)
        var request = URLRequest(url: URL(string: self.daemon.httpURL + "/http/answered-then-changed.json")!)
        request.httpMethod = "PUT"
        request.httpBody = Data("42".utf8)
        _ = try await URLSession.shared.data(for: request)
        let values = Recorder<String>()
        node.observe(.value) { values.add("\($0.value ?? "nil")") }
        #expect(try await values.wait(for: 1) == ["42"])
        try await Task.sleep(for: .milliseconds(100))
        #expect(values.all == ["42"], "\(values.all)")
    }

    @Test func writesReadsAndQueriesOverHTTP() async throws {
        let posts = self.database().reference().child("http/posts")
        let first = posts.childByAutoId()
        try await first.setValue(["title": "one", "views": 5])
        try await posts.childByAutoId().setValue(["title": "two", "views": 9])
        try await posts.child(first.key!).updateChildValues(["views": ServerValue.increment(1)])
        let all = try await posts.getData()
        #expect(all.childrenCount == 2)
        #expect(all.childSnapshot(forPath: "\(first.key!)/views").value as? Int == 6)
        let top = try await posts.queryOrdered(byChild: "views").queryLimited(toLast: 1).getData()
        #expect((top.children.allObjects as! [DataSnapshot]).map { $0.childSnapshot(forPath: "title").value as? String } == ["two"])
        let outcome = Recorder<String>()
        posts.child("bad.key").setValue(1) { error, _ in outcome.add("\(error.map { "\($0)" } ?? "nil")") }
        let refused = try await outcome.wait(for: 1)
        #expect(refused[0].contains("bad.key"), "\(refused)")
        try await posts.child(first.key!).removeValue()
        #expect(try await posts.getData().childrenCount == 1)
    }

    @Test func urlsOfANamespacedDatabaseRoundTrip() async throws {
        // Firebase's emulator URL form: the namespace rides in the query, never in a location's url.
        let database = Database.database(url: self.daemon.httpURL + "/?ns=urls&transport=rest")
        database.callbackQueue = self.queue
        let ref = database.reference().child("a b/ünï")
        #expect(ref.url == self.daemon.httpURL + "/a%20b/%C3%BCn%C3%AF")
        #expect(database.reference().url == self.daemon.httpURL)
        #expect(ref.description == ref.url)
        let back = database.reference(fromURL: ref.url)
        #expect(back.key == "ünï" && back.parent?.key == "a b")
        #expect(database.reference(fromURL: self.daemon.httpURL + "/x/y?ns=urls").url == self.daemon.httpURL + "/x/y")
        // Scheme and host in any case name the same database; the path keeps its case.
        #expect(database.reference(fromURL: self.daemon.httpURL.uppercased() + "/X/y").url == self.daemon.httpURL + "/X/y")
        // A URL's scheme and host are shown in lower case, as Firebase shows them
        // (firebase-js-sdk database.test.ts "Can get database with upper case URL").
        let local = self.daemon.httpURL.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let upper = Database.database(url: local.replacingOccurrences(of: "localhost", with: "LocalHost") + "/?ns=urls")
        #expect(upper.reference().child("A").url == local + "/A")
        try await back.setValue(1)
        #expect(try await ref.getData().value as? Int == 1)
        // Written in namespace "urls", not in the default one.
        #expect(!(try await self.database().reference().child("a b/ünï").getData().exists()))
    }

    @Test func observersHearChildEventsOverSSE() async throws {
        let list = self.database().reference().child("http/list")
        let log = Recorder<String>()
        list.queryOrderedByKey().observe(.childAdded) { log.add("added \($0.key)") }
        list.queryOrderedByKey().observe(.childChanged) { log.add("changed \($0.key)") }
        list.queryOrderedByKey().observe(.childRemoved) { log.add("removed \($0.key)") }
        // A second client writes; the first hears it through its stream.
        let other = Database.database(url: self.daemon.socketURL).reference().child("http/list")
        try await other.child("a").setValue(1)
        _ = try await log.wait(for: 1)
        try await other.child("a").setValue(2)
        try await other.child("b").setValue(3)
        try await other.child("a").removeValue()
        #expect(try await log.wait(for: 4) == ["added a", "changed a", "added b", "removed a"])
    }

    @Test func aLargeEventArrivingInManyReadsIsWhole() async throws {
        let ref = self.database().reference().child("http/large")
        let log = Recorder<Int>()
        ref.observe(.value) { snapshot in log.add((snapshot.value as? String)?.count ?? 0) }
        _ = try await log.wait(for: 1)
        let big = String(repeating: "x", count: 4 << 20)
        // Another client writes it, so the observer hears it only through its stream.
        try await Database.database(url: self.daemon.socketURL).reference().child("http/large").setValue(big)
        let sizes = try await log.wait(for: 2, seconds: 30)
        #expect(sizes == [0, 4 << 20])
    }

    @Test func transactionsRetryOverHTTP() async throws {
        let counter = self.database().reference().child("http/counter")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<5 {
                group.addTask {
                    _ = try await counter.runTransactionBlock { data in
                        data.value = ((data.value as? Int) ?? 0) + 1
                        return TransactionResult.success(withValue: data)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await counter.getData().value as? Int == 5)
    }

    @Test func useEmulatorTakesTheHTTPPortAsInFirebase() async throws {
        let url = try #require(URL(string: self.daemon.httpURL))
        let database = Database.database(url: "https://demo-emulated.firebaseio.com")
        database.useEmulator(withHost: url.host!, port: url.port!)
        database.callbackQueue = self.queue
        let ref = database.reference(withPath: "emulated/greeting")
        try await ref.setValue("hello")
        #expect(try await ref.getData().value as? String == "hello")
        // The namespace came from the URL: the default namespace does not hold it.
        let plain = try await Database.database(url: self.daemon.httpURL).reference(withPath: "emulated/greeting").getData()
        #expect(!plain.exists())
        // As in Firebase, URLs name the emulator, and both URL forms give back a reference.
        #expect(ref.url == "http://\(url.host!):\(url.port!)/emulated/greeting")
        #expect(ref.description == ref.url)
        #expect(database.reference(fromURL: ref.url).key == "greeting")
        #expect(database.reference(fromURL: "https://demo-emulated.firebaseio.com/emulated/greeting").url == ref.url)
        // As Firebase's SDKs (FRepoInfo isCustomHost; firebase-js-sdk "refFromURL returns an
        // emulated ref with useEmulator"), a URL of a host outside Firebase's domains is not
        // checked against the instance's: its path is taken.
        #expect(database.reference(fromURL: "http://localhost:1234/emulated/greeting?ns=other").url == ref.url)
        #expect(database.reference(fromURL: "https://db.example.org").url == "http://\(url.host!):\(url.port!)")
        // Keys as Firebase's urlEncoded: writes them: all but letters, digits, - _ ~ encoded.
        let odd = database.reference().child("a b+c:@=&!*'(),~-_")
        #expect(odd.url == "http://\(url.host!):\(url.port!)/a%20b%2Bc%3A%40%3D%26%21%2A%27%28%29%2C~-_")
        #expect(database.reference(fromURL: odd.url).key == "a b+c:@=&!*'(),~-_")
    }

    @Test func anAppWithOnlyAProjectIDUsesItsDefaultNamespaceOnTheEmulator() async throws {
        let url = try #require(URL(string: self.daemon.httpURL))
        let options = FirebaseOptions(googleAppID: "1:1:ios:1", gcmSenderID: "1")
        options.projectID = "demo-proj\(UInt32.random(in: 0...UInt32.max))"
        let name = "project-\(UUID().uuidString)"
        FirebaseApp.configure(name: name, options: options)
        let database = Database.database(app: try #require(FirebaseApp.app(name: name)))
        database.useEmulator(withHost: url.host!, port: url.port!)
        database.callbackQueue = self.queue
        try await database.reference(withPath: "greeting").setValue("hi")
        // Firebase makes the URL https://<projectID>-default-rtdb.firebaseio.com: that namespace.
        let named = Database.database(url: self.daemon.httpURL + "/?ns=\(options.projectID!)-default-rtdb&transport=rest")
        #expect(try await named.reference(withPath: "greeting").getData().value as? String == "hi")
        #expect(!(try await self.database().reference(withPath: "greeting").getData().exists()))
    }

    /// A transaction without local events completes only after the observers heard its
    /// committed value, as in Firebase, although over HTTP the write's answer comes before its
    /// event.
    @Test func aTransactionWithoutLocalEventsCompletesAfterObserversHearIt() async throws {
        let counter = self.database().reference().child("http/tx-order")
        try await counter.setValue(0)
        let log = Recorder<String>()
        counter.observe(.value) { log.add("value \(($0.value as? Int) ?? -1)") }
        #expect(try await log.wait(for: 1) == ["value 0"])
        for round in 1...10 {
            counter.runTransactionBlock({ data in
                data.value = ((data.value as? Int) ?? 0) + 1
                return TransactionResult.success(withValue: data)
            }, andCompletionBlock: { error, committed, _ in log.add("done \(round) \(error == nil && committed)") }, withLocalEvents: false)
            let got = try await log.wait(for: 1 + 2 * round)
            #expect(Array(got.suffix(2)) == ["value \(round)", "done \(round) true"], "round \(round): \(got.suffix(2))")
        }
    }

    @Test func localEventsComeFirstOverHTTPToo() async throws {
        let ref = self.database().reference().child("http/local")
        let log = Recorder<String>()
        ref.observe(.value) { log.add("value \(($0.value as? Int).map(String.init) ?? "null")") }
        _ = try await log.wait(for: 1)
        ref.setValue(1) { error, _ in log.add("done \(error == nil)") }
        #expect(try await log.wait(for: 3) == ["value null", "value 1", "done true"])
        try await Task.sleep(for: .milliseconds(2200))
        #expect(log.all.count == 3, "the server's own event changes nothing: \(log.all)")
    }

    /// goOnline() while online leaves each observer on its one stream (it started every
    /// stream again, each on a new connection that was never closed).
    @Test func goOnlineWhileOnlineOpensNoOtherStream() async throws {
        let database = Database.database(url: self.daemon.httpURL + "?ns=go-online-twice&transport=rest")
        database.callbackQueue = self.queue
        let before = try await self.daemon.subscriptions(over: "sse")
        let seen = Recorder<String>()
        let handle = database.reference().child("http/online-twice").observe(.value) { seen.add("\($0.value ?? "nil")") }
        _ = try await seen.wait(for: 1)
        for _ in 0..<5 { database.goOnline() }
        try await Task.sleep(for: .milliseconds(500))
        #expect(try await self.daemon.subscriptions(over: "sse") == before + 1)
        try await database.reference().child("http/online-twice").setValue(1)
        try await Task.sleep(for: .milliseconds(200))
        #expect(seen.all == ["<null>", "1"], "one stream, each event once: \(seen.all)")
        database.reference().removeObserver(withHandle: handle)
    }

    /// FIRDatabaseQueryTests testStartAtAndLimit1AndRemoveFirstChild over HTTP: a write's
    /// completion comes after its events, here the child a removal pulls into a limitToFirst(1)
    /// window, which only the stream brings (the REST answer used to come first).
    @Test func aCompletionComesAfterTheEventsOfItsWrite() async throws {
        let database = self.database()
        for round in 0..<15 {
            let ref = database.reference().child("http/remove-first").childByAutoId()
            try await ref.setValue(["a": 1, "b": 2])
            let added = Recorder<String>()
            let handle = ref.queryOrderedByKey().queryLimited(toFirst: 1).observe(.childAdded) { added.add($0.key) }
            #expect(try await added.wait(for: 1) == ["a"])
            let atCompletion = Recorder<[String]>()
            ref.child("a").removeValue { _, _ in atCompletion.add(added.all) }
            #expect(try await atCompletion.wait(for: 1) == [["a", "b"]], "round \(round)")
            ref.removeObserver(withHandle: handle)
        }
    }
}
