// Requests across a lost connection, against a real eddyd behind a TCP proxy: a read or a
// plain write in flight when the connection drops is sent again on the next connection and
// answered there (as Firebase's SDKs restore outstanding gets and puts; over HTTP, a plain
// write whose request is cut is tried again, and goOffline lets one on its way finish); a read
// that finds no connection for a while fails with `disconnected` rather than waiting for good.

import EddyClient
import Foundation
import Testing

@Suite(.serialized) struct ConnectionLossTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.client.connection-loss.tests")

    init() async throws {
        self.daemon = try DaemonProcess()
        // A request whose body stalls is answered 408 after 2 s instead of 30 (the HTTP write test).
        try await self.daemon.start(["--http-body-timeout-seconds", "2"])
    }

    private func proxy() throws -> TCPProxy { try TCPProxy(to: self.daemon.tcpURL) }

    /// The get reaches eddyd while it is stopped (SIGSTOP), so it is unanswered when the proxy
    /// cuts the connection; the client connects again and eddyd, resumed, answers it there.
    @Test func aReadInFlightWhenTheConnectionDropsIsAnsweredOnTheNextOne() async throws {
        let proxy = try self.proxy()
        let database = Database.database(url: proxy.url, callingBackOn: self.queue)
        let ref = database.reference().child("carried")
        try await ref.setValue("kept")
        self.daemon.pause()
        defer { self.daemon.signal(SIGCONT) }
        let outcome = Recorder<String>()
        ref.getData { error, snapshot in outcome.add(error.map { "\($0)" } ?? "\(snapshot?.value ?? "none")") }
        try await Task.sleep(for: .milliseconds(200))  // sent: eddyd holds it unread
        proxy.cutAll()
        try await Task.sleep(for: .milliseconds(300))  // the client connects again (eddyd's backlog takes it)
        #expect(outcome.all.isEmpty, "the read waits for the next connection: \(outcome.all)")
        self.daemon.signal(SIGCONT)
        #expect(try await outcome.wait(for: 1) == ["kept"])
    }

    /// Sets `ref` from "before" to "after" while eddyd is stopped (SIGSTOP), so the write is on
    /// its way, unanswered, when `interrupt` runs; resumes eddyd after 300 ms. Answers the
    /// write's completion outcomes before eddyd was resumed (`waiting`) and the first one after.
    private func writeInterrupted(_ ref: DatabaseReference, by interrupt: () -> Void) async throws -> (waiting: [String], answered: [String]) {
        try await ref.setValue("before")
        self.daemon.pause()
        defer { self.daemon.signal(SIGCONT) }
        let outcome = Recorder<String>()
        ref.setValue("after") { error, _ in outcome.add(error.map { "\($0)" } ?? "ok") }
        try await Task.sleep(for: .milliseconds(200))  // sent: eddyd holds it unread
        interrupt()
        try await Task.sleep(for: .milliseconds(300))
        let waiting = outcome.all
        self.daemon.signal(SIGCONT)
        return (waiting, try await outcome.wait(for: 1, seconds: 30))
    }

    /// A plain write sent just before the connection drops is sent again on the next one and
    /// succeeds (sets are idempotent); only a transaction's write fails then (see README). Over
    /// HTTP the same holds for a write whose request is cut on its way. (URLSession on Linux
    /// resends the request by itself on a new connection but without its body; eddyd answers
    /// that one 408 once the body timeout passes, and the client tries again.)
    @Test(arguments: ["native", "http"]) func aWriteInFlightWhenTheConnectionDropsIsSentAgain(transport: String) async throws {
        let proxy = try TCPProxy(to: transport == "http" ? self.daemon.httpURL : self.daemon.tcpURL)
        let database = Database.database(url: transport == "http" ? proxy.restURL : proxy.url, callingBackOn: self.queue)
        let ref = database.reference().child("resent-\(transport)")
        let (waiting, answered) = try await self.writeInterrupted(ref) { proxy.cutAll() }
        #expect(waiting.isEmpty, "the write waits for the next connection: \(waiting)")
        #expect(answered == ["ok"])
        #expect(try await ref.getData().value as? String == "after")
    }

    /// Over HTTP, `goOffline()` leaves a plain write on its way alone: it is answered and its
    /// completion reports success (only a transaction's write is cancelled then).
    @Test func goOfflineOverHTTPLetsAPlainWriteOnItsWayFinish() async throws {
        let database = Database.database(url: self.daemon.restURL, callingBackOn: self.queue)
        let ref = database.reference().child("offline-http")
        let (waiting, answered) = try await self.writeInterrupted(ref) { database.goOffline() }
        #expect(waiting.isEmpty, "the write is still on its way: \(waiting)")
        #expect(answered == ["ok"])
        database.goOnline()
        #expect(try await ref.getData().value as? String == "after")
    }

    /// With eddyd gone, a read fails with `disconnected` once it has waited for a connection
    /// for a while (3 s, as Firebase's iOS SDK), and a later read after eddyd is back succeeds.
    @Test func aReadWithoutAConnectionFailsAfterAWhile() async throws {
        let proxy = try self.proxy()
        let database = Database.database(url: proxy.url, callingBackOn: self.queue)
        let ref = database.reference().child("gone")
        try await ref.setValue(1)
        self.daemon.pause()
        let outcome = Recorder<String>()
        ref.getData { error, snapshot in outcome.add(error.map { "\($0)" } ?? "\(snapshot?.value ?? "none")") }
        try await Task.sleep(for: .milliseconds(200))
        // Every connection through the proxy is cut, and so is every new one: the read never
        // finds a connection that answers.
        let cutting = Task {
            while !Task.isCancelled {
                proxy.cutAll()
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        defer { cutting.cancel() }
        let failed = try await outcome.wait(for: 1, seconds: 30)
        #expect(failed.first?.contains("disconnected") == true, "\(failed)")
        cutting.cancel()
        self.daemon.signal(SIGCONT)
        #expect(try await ref.getData().value as? Int == 1)
    }
}
