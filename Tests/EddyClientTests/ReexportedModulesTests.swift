// `import EddyClient` alone brings Foundation and Dispatch, as `import FirebaseDatabase` does on
// Apple platforms: this file imports nothing else, and swift-testing brings no Foundation, so it
// compiles only while EddyClient re-exports them.

import EddyClient
import Testing

struct ReexportedModulesTests {
    @Test func foundationTypesNeedNoImportOfTheirOwn() {
        let value: [String: Any] = ["none": NSNull(), "at": Date(timeIntervalSince1970: 0).timeIntervalSince1970, "n": NSNumber(value: 3)]
        let queue = DispatchQueue(label: "eddy.client.reexport")
        #expect(queue.label == "eddy.client.reexport")
        #expect(value["none"] is NSNull)
        #expect((value["n"] as? NSNumber)?.intValue == 3)
    }
}
