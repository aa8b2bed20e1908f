// Nested observers' first values in Firebase's order: Firebase serves listeners below a
// location from that location's listen and raises a change's events deepest first, siblings'
// subtrees in key order, so observers of `node`, `node/a`, `node/a/aa` and `node/b`, added in
// that order, hear `a/aa`, `a`, `b`, then `node` (FEventTests testEmptyChildGetValueEventBeforeParent
// and its compound-object tests). Over the native protocol, on its socket and on eddyd's HTTP port.

import Dispatch
import EddyClient
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing

@Suite(.serialized) struct NestedFirstValuesTests {
    let daemon: DaemonProcess

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    @Test(arguments: ["tcp", "http-port"]) func nestedObserversHearTheirFirstValuesDeepestFirst(transport: String) async throws {
        let database = Database.database(url: transport == "tcp" ? self.daemon.tcpURL : self.daemon.httpURL + "?ns=nested")
        database.callbackQueue = DispatchQueue(label: "eddy.client.nested-first")
        for round in 0..<5 {
            let node = database.reference().child("nested/\(transport)/\(round)")
            try await node.setValue(["a": ["aa": 1, "ab": 2], "b": 3, "c": ["x": true]])
            let heard = Recorder<String>()
            var handles: [(DatabaseReference, DatabaseHandle)] = []
            // All five observers are made before eddyd answers the first (it is stopped meanwhile),
            // as when code adds them in one go: an observer added after `node` heard its data is
            // answered on its own, after it.
            self.daemon.pause()
            for (name, ref) in [("node", node), ("a", node.child("a")), ("a/aa", node.child("a/aa")), ("b", node.child("b")), ("c/x", node.child("c/x"))] {
                handles.append((ref, ref.observe(.value) { heard.add("\(name) \($0.value ?? "nil")") }))
            }
            self.daemon.signal(SIGCONT)
            let first = try await heard.wait(for: 5)
            #expect(first.map { String($0.split(separator: " ")[0]) } == ["a/aa", "a", "b", "c/x", "node"], "round \(round): \(first)")
            // Each view's own first data, which comes after, raises nothing more.
            try await Task.sleep(for: .milliseconds(300))
            #expect(heard.all.count == 5, "round \(round): \(heard.all)")
            try await node.child("a/aa").setValue(10)
            let changed = try await heard.wait(for: 8)
            #expect(Array(changed.dropFirst(5)).map { String($0.split(separator: " ")[0]) } == ["a/aa", "a", "node"], "round \(round): \(changed)")
            for (ref, handle) in handles { ref.removeObserver(withHandle: handle) }
        }
    }
}
