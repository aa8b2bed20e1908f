// Data keyed by integers with gaps (a list after one element was removed) against a real eddyd,
// over the native protocol and over HTTP: the server sends such a location in Firebase's array
// form (`[null, "b", "c"]`), and the client's snapshots hold only the children that exist, as
// Firebase's do. Only `value` shows the array form, with NSNull where a child is missing.

import Dispatch
import EddyClient
import Foundation
import Testing

@Suite(.serialized) struct SparseListTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.client.sparse.tests")

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    private func database(_ url: String) -> Database { Database.database(url: url, callingBackOn: self.queue) }

    @Test(arguments: ["native", "http"]) func aListWithARemovedElementHasOnlyItsChildren(transport: String) async throws {
        let database = self.database(transport == "native" ? self.daemon.socketURL : self.daemon.restURL)
        let ref = database.reference().child("sparse/\(transport)")
        try await ref.setValue(["a", "b", "c"])
        try await ref.child("0").removeValue()

        let snapshot = try await ref.getData()
        #expect(snapshot.childrenCount == 2)
        #expect((snapshot.children.allObjects as? [DataSnapshot])?.map(\.key) == ["1", "2"])
        #expect(!snapshot.hasChild("0") && snapshot.hasChild("1"))
        let value = try #require(snapshot.value as? [Any], "Firebase's array form: \(String(describing: snapshot.value))")
        #expect(value.count == 3 && value[0] is NSNull && value[1] as? String == "b" && value[2] as? String == "c")

        let added = Recorder<String>()
        let handle = ref.observe(.childAdded) { child in added.add("\(child.key)=\(child.value ?? "nil")") }
        let values = Recorder<UInt>()
        let valueHandle = ref.observe(.value) { whole in values.add(whole.childrenCount) }
        #expect(try await added.wait(for: 2) == ["1=b", "2=c"])
        #expect(try await values.wait(for: 1) == [2])
        // A nested list that arrives in a change: the child's snapshot has no phantom child either.
        try await ref.child("2").setValue(["1": "x", "2": "y"])
        let changed = Recorder<UInt>()
        let changedHandle = ref.observe(.childChanged) { child in changed.add(child.childrenCount) }
        try await ref.child("2").setValue(["1": "x", "3": "z"])
        #expect(try await changed.wait(for: 1) == [2])
        ref.removeObserver(withHandle: handle)
        ref.removeObserver(withHandle: valueHandle)
        ref.removeObserver(withHandle: changedHandle)
        #expect(added.all.count == 2, "no child \"0\" was ever added: \(added.all)")

        let (committed, result) = try await ref.runTransactionBlock { data in
            data.value = data.childrenCount  // 2 children, never 3
            return .success(withValue: data)
        }
        #expect(committed && result.value as? Int == 2)
    }
}
