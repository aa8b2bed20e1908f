// A native URL names a namespace with `?ns=NAME`, as an HTTP one does: every request and
// subscription of that instance goes to that namespace, against a real eddyd.

import Dispatch
@testable import EddyClient
import Foundation
import Testing

@Suite(.serialized) struct NativeNamespaceTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.client.namespace.tests")

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    private func database(_ url: String) -> Database { Database.database(url: url, callingBackOn: self.queue) }

    @Test func aNativeURLWritesReadsAndListensInItsNamespace() async throws {
        let native = self.database(self.daemon.socketURL + "?ns=team-a")
        let ref = native.reference().child("greeting")
        #expect(ref.url == self.daemon.socketURL + "/greeting", "the namespace is not part of a location's URL")
        let heard = Recorder<String>()
        ref.observe(.value) { heard.add(($0.value as? String) ?? "null") }
        #expect(try await heard.wait(for: 1) == ["null"])
        try await ref.setValue("hello")
        #expect(try await heard.wait(for: 2) == ["null", "hello"])
        #expect(try await ref.getData().value as? String == "hello")

        // Over HTTP: in namespace team-a, not in the default one.
        let http = self.database(self.daemon.httpURL + "/?ns=team-a")
        #expect(try await http.reference().child("greeting").getData().value as? String == "hello")
        let plain = self.database(self.daemon.socketURL)
        #expect(!(try await plain.reference().child("greeting").getData().exists()))
    }

    @Test func theNamespaceOfEveryURLForm() {
        #expect(Database.namespace("eddy+unix:///var/lib/eddy/eddyd.sock?ns=a") == "a")
        #expect(Database.namespace("eddy://a:9001,b:9001?ns=b") == "b")
        #expect(Database.namespace("http://127.0.0.1:9000/?ns=c") == "c")
        #expect(Database.namespace("https://d.firebaseio.com") == "d")
        // Host names are case-blind, as Firebase lowercases them (firebase-js-sdk database.test.ts).
        #expect(Database.namespace("https://MCFIXED.firebaseio.com") == "mcfixed")
        #expect(Database.namespace("http://UCFIXED.EUW1.firebaseDATABASE.app") == "ucfixed")
        #expect(Database.namespace("eddy://a:9001") == nil)
        #expect(Database.endpoints("eddy://a:9001,b:9002?ns=b")?.count == 2)
        #expect(Database.endpoint("eddy+unix:///x/eddyd.sock?ns=a").map { "\($0)" } == "\(ClientConnection.Endpoint.unix(path: "/x/eddyd.sock"))")
    }
}
