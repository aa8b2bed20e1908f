// Many writes in flight under an observer of their list: each raises its events once, in order,
// and what the events build is the server's data. A view recomputes only the children a change
// touches (`QueryView.showChanged`); the seeded model test (the seed is printed; rerun with
// EDDY_SEED) mixes this client's writes at every depth, writes of the whole list, and another
// client's writes, and writes the rules refuse (taken back when refused), and checks every event
// against the children the observer holds.

import Dispatch
import EddyClient
import EddyTesting
import Foundation
import Synchronization
import Testing

@Suite(.serialized) struct WriteBurstTests {
    /// 2,000 pushes made at once under `childAdded` and `value` observers: each child is added
    /// once, in push order, and the last value holds them all. (Each write used to sort every
    /// child of the view again: this took minutes.)
    @Test(arguments: ["native", "http"]) func aBurstOfPushesRaisesEachChildOnceInOrder(transport: String) async throws {
        let daemon = try DaemonProcess()
        try await daemon.start()
        let database = Database.database(url: transport == "http" ? daemon.restURL : daemon.tcpURL)
        database.callbackQueue = DispatchQueue(label: "eddy.client.burst")
        let list = database.reference().child("burst/pushes")
        let ready = Recorder<Bool>()
        list.observeSingleEvent(of: .value) { _ in ready.add(true) }
        _ = try await ready.wait(for: 1)
        let added = Recorder<String>()
        let lastCount = Mutex(UInt(0))
        list.observe(.childAdded) { added.add($0.key) }
        list.observe(.value) { snapshot in lastCount.withLock { $0 = snapshot.childrenCount } }
        let count = transport == "http" ? 500 : 2000
        let answered = Recorder<Bool>()
        var keys: [String] = []
        for i in 0..<count {
            let child = list.childByAutoId()
            keys.append(child.key!)
            child.setValue(["n": i]) { error, _ in answered.add(error == nil) }
        }
        #expect(try await added.wait(for: count, seconds: 120) == keys)
        #expect(try await answered.wait(for: count, seconds: 120).allSatisfy { $0 })
        #expect(lastCount.withLock { $0 } == UInt(count))
        try await Task.sleep(for: .milliseconds(300))
        #expect(added.all.count == count, "a child was added twice")
    }

    @Test func eventsOfMixedWritesBuildTheServersData() async throws {
        let seed = SeededGenerator.seedFromEnvironment()
        print("WriteBurstTests: EDDY_SEED=\(seed)")
        var g = SeededGenerator(seed: seed)
        let daemon = try DaemonProcess()
        try await daemon.start()
        try await daemon.putRules(
            #"{"rules": {".read": true, ".write": true, "burst": {"mixed": {"$k": {".validate": "newData.val() != 'refused'"}}}}}"#)
        let mine = Database.database(url: daemon.tcpURL, callingBackOn: DispatchQueue(label: "eddy.client.burst.mine"))
        let theirs = Database.database(url: daemon.socketURL, callingBackOn: DispatchQueue(label: "eddy.client.burst.theirs"))
        let list = mine.reference().child("burst/mixed")
        let ready = Recorder<Bool>()
        list.observeSingleEvent(of: .value) { _ in ready.add(true) }
        _ = try await ready.wait(for: 1)

        let observed = ObservedChildren()
        list.observe(.childAdded, andPreviousSiblingKeyWith: { observed.added($0.key, $0.value, after: $1) })
        list.observe(.childChanged, andPreviousSiblingKeyWith: { observed.changed($0.key, $0.value, after: $1) })
        list.observe(.childRemoved) { observed.removed($0.key) }
        list.observe(.value) { observed.value($0.value) }

        // Letters only: their order is plain string order, and integer keys would make the
        // value an array.
        let keys = ["a", "b", "c", "d", "e", "f", "g"]
        let answered = Recorder<Bool>()
        let refused = Recorder<Bool>()
        let operations = 400
        var refusals = 0
        for _ in 0..<operations {
            let key = keys.randomElement(using: &g)!
            let number = Int.random(in: 0..<5, using: &g)
            let (location, value): (DatabaseReference, Any?) =
                switch Int.random(in: 0..<100, using: &g) {
                case 0..<35: (list.child(key), number)
                case 35..<50: (list.child(key).child("x"), number)
                case 50..<56: (list.child(key), nil)
                case 56..<60: (list.child(Bool.random(using: &g) ? key : "refusals"), "refused")
                case 60..<64: (list, ["a": number, "c": ["x": number]])
                case 64..<80: (theirs.reference().child("burst/mixed").child(key), number)
                case 80..<88: (theirs.reference().child("burst/mixed").child(key), nil)
                default: (list, nil)  // an update below
                }
            if Int.random(in: 0..<100, using: &g) >= 88 {
                let other = keys.filter { $0 != key }.randomElement(using: &g)!  // not a path above another
                list.updateChildValues([key: number, "\(other)/y": number + 1]) { error, _ in answered.add(error == nil) }
            } else if let text = value as? String {
                refusals += 1
                location.setValue(text) { error, _ in refused.add(error != nil) }
            } else {
                location.setValue(value) { error, _ in answered.add(error == nil) }
            }
        }
        #expect(try await answered.wait(for: operations - refusals, seconds: 120).allSatisfy { $0 })
        #expect(try await refused.wait(for: refusals, seconds: 120).allSatisfy { $0 })
        // Last, alone, one more the rules refuse at a child nothing else writes: taking it back
        // is all that removes it.
        list.child("refusals").setValue("refused") { error, _ in refused.add(error != nil) }
        #expect(try await refused.wait(for: refusals + 1, seconds: 120).allSatisfy { $0 })
        // The server's data, read by the other client once every write is answered.
        let server = try await theirs.reference().child("burst/mixed").getData().value
        let deadline = Date().addingTimeInterval(30)
        while !observed.holds(server), Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(observed.problems.isEmpty, "seed \(seed): \(observed.problems.prefix(5))")
        #expect(observed.holds(server), "seed \(seed): children \(observed.children), last value \(String(describing: observed.lastValue)), server \(String(describing: server))")
    }
}

/// The children an observer holds from its child events, and what was wrong with any event.
/// Values are kept in a canonical text form (`canonical`), so they can be compared and sent.
private final class ObservedChildren: Sendable {
    private struct State {
        var children: [String: String] = [:]
        var lastValue = "null"
        var problems: [String] = []
    }

    private let state = Mutex(State())

    var children: [String: String] { self.state.withLock { $0.children } }
    var lastValue: String { self.state.withLock { $0.lastValue } }
    var problems: [String] { self.state.withLock { $0.problems } }

    func added(_ key: String, _ value: Any?, after previous: String?) {
        let text = Self.canonical(value)
        self.state.withLock { state in
            if state.children[key] != nil { state.problems.append("added \(key), already held") }
            state.children[key] = text
            Self.check(previous, of: key, &state)
        }
    }

    func changed(_ key: String, _ value: Any?, after previous: String?) {
        let text = Self.canonical(value)
        self.state.withLock { state in
            guard let old = state.children[key] else { return state.problems.append("changed \(key), not held") }
            if old == text { state.problems.append("changed \(key) to what it was") }
            state.children[key] = text
            Self.check(previous, of: key, &state)
        }
    }

    func removed(_ key: String) {
        self.state.withLock { state in
            if state.children.removeValue(forKey: key) == nil { state.problems.append("removed \(key), not held") }
        }
    }

    /// A value event: it must hold exactly the children the child events built.
    func value(_ value: Any?) {
        let text = Self.canonical(value)
        self.state.withLock { state in
            state.lastValue = text
            let held = Self.text(of: state.children)
            if held != text { state.problems.append("value \(text) after children \(held)") }
        }
    }

    /// Whether the children and the last value are `server`'s.
    func holds(_ server: Any?) -> Bool {
        let expected = Self.canonical(server)
        return self.state.withLock { state in Self.text(of: state.children) == expected && state.lastValue == expected }
    }

    /// The previous sibling an event names must be the held child before `key`.
    private static func check(_ previous: String?, of key: String, _ state: inout State) {
        let before = state.children.keys.filter { $0 < key }.max()
        if previous != before { state.problems.append("\(key) after \(previous ?? "nil"), held before it: \(before ?? "nil")") }
    }

    private static func text(of children: [String: String]) -> String {
        children.isEmpty ? "null" : "{" + children.keys.sorted().map { "\($0):\(children[$0]!)" }.joined(separator: ",") + "}"
    }

    static func canonical(_ value: Any?) -> String {
        switch value {
        case nil, is NSNull: return "null"
        case let dictionary as [String: Any]: return self.text(of: dictionary.mapValues { self.canonical($0) })
        case let array as [Any]: return "[" + array.map { self.canonical($0) }.joined(separator: ",") + "]"
        case let string as String: return "\"\(string)\""
        case let number as NSNumber: return number.stringValue
        default: return "?\(String(describing: value))"
        }
    }
}
