// Model-based: random writes through the client (and some through another client, alone or
// at the same time as this one's), its observers' events compared with EddyTesting's
// reference model. For queries without a limit, the events each write raises
// (locally, before the server answers) must be exactly the reference's for that write, and the
// server's own events must add nothing. For limit windows (where the client cannot see past
// the window until the server answers), the events must replay to the window the value events
// show, and end at the reference's window; the Realm change sets must replay likewise. The
// seed is printed; rerun one with EDDY_CLIENT_MODEL_SEED (and EDDY_CLIENT_MODEL_WRITES steps;
// EDDY_CLIENT_MODEL_HTTP=1 runs it over HTTP too).

import Dispatch
import EddyModel
import EddyTesting
import Foundation
import Testing

@testable import EddyClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.serialized) struct ClientModelTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.client.model")

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    /// A query as the client builds it and as the model takes it.
    struct Case {
        let name: String
        let client: DatabaseQuery
        let model: Query?
        var limited: Bool { self.model?.limit != nil }
    }

    /// Events as the model writes them.
    final class EventLog: @unchecked Sendable {
        // @unchecked: touched only on the test's callback queue and after draining it.
        var events: [ListenerEvent] = []
        /// The window replayed from the child events (limited queries).
        var replayed: [(key: String, value: Value)] = []
        var replayErrors: [String] = []

        /// Child events since the last value event.
        var pending: [ListenerEvent] = []

        /// Whether the events so far replay to `window` (keys and values, in any order).
        func shows(_ window: [(key: String, value: Value)]) -> Bool {
            Dictionary(uniqueKeysWithValues: self.replayed.map { ($0.key, $0.value) }) == Dictionary(uniqueKeysWithValues: window.map { ($0.key, $0.value) })
        }

        func record(_ kind: ListenerEvent.Kind, _ snapshot: DataSnapshot, _ previous: String?) {
            let isValue = kind == .value
            let event = ListenerEvent(
                kind: kind, key: isValue ? nil : snapshot.key, previousKey: kind == .childRemoved || isValue ? nil : previous,
                value: snapshot.data)
            self.events.append(event)
            switch kind {
            case .childRemoved:
                self.replayed.removeAll { $0.key == snapshot.key }
                self.pending.append(event)
            case .childAdded, .childMoved, .childChanged:
                self.replayed.removeAll { $0.key == snapshot.key }
                self.replayed.append((snapshot.key, snapshot.data))
                self.pending.append(event)
            case .value:
                // The child events of one change take the window to what the value shows, and
                // each previous key is the key before the child in that new window (as
                // Firebase computes them, so they hold for the final window, not step by step).
                let shown = snapshot.childSnapshots.map { (key: $0.key, value: $0.data) }
                let replayed = Dictionary(uniqueKeysWithValues: self.replayed.map { ($0.key, $0.value) })
                if Set(replayed.keys) != Set(shown.map(\.key)) || shown.contains(where: { replayed[$0.key] != $0.value }) {
                    self.replayErrors.append("child events replay to \(self.replayed.map(\.key).sorted()), value shows \(shown.map(\.key))")
                }
                for event in self.pending where event.kind != .childRemoved {
                    guard let i = shown.firstIndex(where: { $0.key == event.key }) else {
                        self.replayErrors.append("\(event) is not in the window \(shown.map(\.key))")
                        continue
                    }
                    if event.previousKey != (i > 0 ? shown[i - 1].key : nil) {
                        self.replayErrors.append("\(event): previous key is not the one before it in \(shown.map(\.key))")
                    }
                }
                self.pending.removeAll()
                self.replayed = shown
            }
        }
    }

    /// Change sets replayed onto the previous results.
    final class ChangeLog: @unchecked Sendable {
        var results: [(key: String, value: Value)] = []
        var errors: [String] = []
        var count = 0

        func record(_ change: DatabaseCollectionChange) {
            self.count += 1
            switch change {
            case .initial(let results):
                self.results = results.children.map { ($0.key, $0.data) }
            case .update(let results, let deletions, let insertions, let modifications):
                let new = results.children.map { (key: $0.key, value: $0.data) }
                var keys = self.results.map(\.key)
                for i in deletions.reversed() { keys.remove(at: i) }
                for i in insertions { keys.insert(new[i].key, at: i) }
                if keys != new.map(\.key) { self.errors.append("replayed \(keys), results \(new.map(\.key))") }
                let kept = Set(0..<self.results.count).subtracting(deletions)
                for i in kept {
                    let old = self.results[i]
                    let changed = new.first { $0.key == old.key }?.value != old.value
                    if changed != modifications.contains(i) { self.errors.append("modification of \(old.key) at old index \(i): \(changed)") }
                }
                self.results = new
            case .error(let error):
                self.errors.append("\(error)")
            }
        }
    }

    /// The transports the writing client and the other client use: the native protocol (Unix
    /// socket and TCP), and HTTP for both (REST and SSE, as after Firebase's `useEmulator`).
    enum Transports: String, CaseIterable, CustomTestStringConvertible {
        case native, http
        var testDescription: String { self.rawValue }

        /// The native protocol in `make test`, where every suite runs at once on 2 cores and the
        /// HTTP run's streams add enough load to starve other suites' timing; both with
        /// EDDY_CLIENT_MODEL_HTTP=1.
        static var selected: [Transports] {
            ProcessInfo.processInfo.environment["EDDY_CLIENT_MODEL_HTTP"] == "1" ? allCases : [.native]
        }
    }

    @Test(arguments: Transports.selected) func clientEventsMatchTheReferenceModel(_ transports: Transports) async throws {
        let seed = ProcessInfo.processInfo.environment["EDDY_CLIENT_MODEL_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64(UInt32.max))
        print("ClientModelTests \(transports) seed \(seed) (rerun with EDDY_CLIENT_MODEL_SEED=\(seed))")
        var g = SeededGenerator(seed: seed)
        let database = Database.database(url: transports == .native ? self.daemon.socketURL : self.daemon.restURL)
        database.callbackQueue = self.queue
        let location = Path(validatedKeys: ["model", "items"])
        let list = database.reference().child("model/items")
        let score = Path(validatedKeys: ["score"])
        let cases = [
            Case(name: "plain", client: list, model: nil),
            Case(
                name: "score from 3", client: list.queryOrdered(byChild: "score").queryStarting(atValue: 3),
                model: Query(order: .child(score), start: Query.Bound(value: .number(3), inclusive: true))),
            Case(
                name: "keys to k5", client: list.queryOrderedByKey().queryEnding(atValue: "k5"),
                model: Query(order: .key, end: Query.Bound(value: .string("k5"), inclusive: true))),
            Case(
                name: "top 3 scores", client: list.queryOrdered(byChild: "score").queryLimited(toLast: 3),
                model: Query(order: .child(score), limit: .last(3))),
            Case(name: "first 2 keys", client: list.queryOrderedByKey().queryLimited(toFirst: 2), model: Query(order: .key, limit: .first(2))),
        ]
        let logs = cases.map { _ in EventLog() }
        for (log, c) in zip(logs, cases) {
            for kind in [DataEventType.childRemoved, .childAdded, .childMoved, .childChanged, .value] {
                let modelKind: ListenerEvent.Kind = [.childRemoved: .childRemoved, .childAdded: .childAdded, .childMoved: .childMoved, .childChanged: .childChanged, .value: .value][kind]!
                c.client.observe(kind, andPreviousSiblingKeyWith: { snapshot, previous in log.record(modelKind, snapshot, previous) })
            }
        }
        // Another client observes the plain location: it hears only the server's batches.
        // Over HTTP a second instance needs a URL of its own (instances are kept per URL).
        let remoteDatabase = Database.database(url: transports == .native ? self.daemon.tcpURL : self.daemon.restURL.replacingOccurrences(of: "127.0.0.1", with: "localhost"))
        remoteDatabase.callbackQueue = self.queue
        let remote = EventLog()
        let remoteList = remoteDatabase.reference().child("model/items")
        for kind in [DataEventType.childRemoved, .childAdded, .childMoved, .childChanged, .value] {
            let modelKind: ListenerEvent.Kind = [.childRemoved: .childRemoved, .childAdded: .childAdded, .childMoved: .childMoved, .childChanged: .childChanged, .value: .value][kind]!
            remoteList.observe(kind, andPreviousSiblingKeyWith: { snapshot, previous in remote.record(modelKind, snapshot, previous) })
        }
        let changeLogs = cases.map { _ in ChangeLog() }
        let tokens = zip(changeLogs, cases).map { log, c in c.client.observe { log.record($0) } }
        // The initial events: each view's first value.
        let deadline = Date().addingTimeInterval(15)
        while await self.drained({ logs.contains { !$0.events.contains { $0.kind == .value } } }), Date() < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        var model = ReferenceModel()
        for (log, c) in zip(logs, cases) {
            #expect(log.events == ReferenceModel.initialEvents(model.root, at: location, c.model), "\(c.name) initial (seed \(seed))")
            log.events.removeAll()
        }
        let keys = (0..<8).map { "k\($0)" }
        func randomChild() -> Value {
            if Int.random(in: 0..<10, using: &g) == 0 { return .number(Double(Int.random(in: 0..<10, using: &g))) }
            var child: [String: Value] = ["tag": .string(["a", "b", "c"][Int.random(in: 0..<3, using: &g)])]
            if Int.random(in: 0..<5, using: &g) > 0 { child["score"] = .number(Double(Int.random(in: 0..<10, using: &g))) }
            return .object(child)
        }
        // 150 steps per transport in `make test`, where every suite runs at once on 2 cores;
        // EDDY_CLIENT_MODEL_WRITES runs more.
        let writes = ProcessInfo.processInfo.environment["EDDY_CLIENT_MODEL_WRITES"].flatMap(Int.init) ?? 150
        for step in 0..<writes {
            let before = model.root
            let key = keys[Int.random(in: 0..<keys.count, using: &g)]
            let roll = Int.random(in: 0..<25, using: &g)
            let description: String
            var exact = true
            if roll == 24 {
                // Both clients write at once, some keys the same: the other client's writes reach
                // this client's views while its own are still on their way (shown, not yet
                // answered), and where both write a key, the server's order decides. The model
                // takes the server's result; the events of this step are only checked to replay
                // consistently and to end there.
                exact = false
                // Six writes, three from each client, each a set, a remove, a score or an update of
                // two children, on keys drawn apart for each (so some are the same).
                var writes: [(remote: Bool, path: String, values: [String: Value])] = []
                for i in 0..<6 {
                    let k = keys[Int.random(in: 0..<keys.count, using: &g)]
                    switch Int.random(in: 0..<4, using: &g) {
                    case 0: writes.append((i >= 3, k, ["": randomChild()]))
                    case 1: writes.append((i >= 3, k, ["": .null]))
                    case 2: writes.append((i >= 3, k, ["score": .number(Double(Int.random(in: 0..<10, using: &g)))]))
                    default:
                        let other = keys[Int.random(in: 0..<keys.count, using: &g)]
                        var children = [k: randomChild()]
                        children[other] = randomChild()
                        writes.append((i >= 3, "", children))
                    }
                }
                description = "both clients write at once: \(writes.map { "\($0.remote ? "other" : "this") \($0.path) \($0.values.keys.sorted())" })"
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for write in writes {
                        let base = write.path.isEmpty ? (write.remote ? remoteList : list) : (write.remote ? remoteList : list).child(write.path)
                        if let whole = write.values[""] {
                            if whole == .null {
                                group.addTask { _ = try await base.removeValue() }
                            } else {
                                let value = FoundationValue.foundation(whole)
                                group.addTask { _ = try await base.setValue(value) }
                            }
                        } else if write.path.isEmpty {
                            let update = FoundationValue.foundation(.object(write.values)) as! [String: Any]
                            group.addTask { _ = try await base.updateChildValues(update) }
                        } else {
                            let (k, v) = write.values.first!
                            let value = FoundationValue.foundation(v)
                            group.addTask { _ = try await base.child(k).setValue(value) }
                        }
                    }
                    try await group.waitForAll()
                }
                let (body, _) = try await URLSession.shared.data(from: URL(string: self.daemon.httpURL + "/model/items.json")!)
                model.set(location, try JSONParser.parse(Array(body)))
                try await self.waitUntilShown(model.root, at: location, cases: cases, logs: logs)
            } else if roll >= 20 {
                // The other client writes: this client's views hear it from the server only, over
                // whatever this client wrote before it.
                let value = randomChild()
                model.set(location.appending(key), value)
                description = "the other client sets \(key) \(JSONWriter.string(value))"
                _ = try await remoteList.child(key).setValue(FoundationValue.foundation(value))
                try await self.waitUntilShown(model.root, at: location, cases: cases, logs: logs)
            } else if roll < 11 {
                let value = randomChild()
                model.set(location.appending(key), value)
                description = "set \(key) \(JSONWriter.string(value))"
                _ = try await list.child(key).setValue(FoundationValue.foundation(value))
            } else if roll < 14 {
                let other = keys[Int.random(in: 0..<keys.count, using: &g)]
                let (a, b) = (randomChild(), randomChild())
                let pairs = other == key ? [(key, b)] : [(key, a), (other, b)]
                model.update(location, pairs.map { (Path(validatedKeys: [$0.0]), $0.1) })
                description = "update \(pairs.map { "\($0.0)=\(JSONWriter.string($0.1))" })"
                var values: [AnyHashable: Any] = [:]
                for (k, v) in pairs { values[k] = FoundationValue.foundation(v) }
                _ = try await list.updateChildValues(values)
            } else if roll < 17 {
                model.remove(location.appending(key))
                description = "remove \(key)"
                _ = try await list.child(key).removeValue()
            } else {
                let n = Double(Int.random(in: 0..<10, using: &g))
                model.set(location.appending(key).appending("score"), .number(n))
                description = "set \(key)/score \(n)"
                _ = try await list.child(key).child("score").setValue(n)
            }
            _ = await self.drained { true }
            for (log, c) in zip(logs, cases) where !c.limited {
                let expected = ReferenceModel.events(before: before, after: model.root, at: location, c.model)
                if exact { #expect(log.events == expected, "step \(step) \(description), \(c.name) (seed \(seed))") }
                log.events.removeAll()
            }
        }
        // Every view ends at the model's window; limited ones replay consistently.
        for (i, c) in cases.enumerated() {
            let expected = ReferenceModel.listenerResult(model.root, at: location, c.model)
            let deadline = Date().addingTimeInterval(10)
            while await self.drained({ logs[i].replayed.map(\.key) != expected.map(\.key) }), Date() < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            _ = await self.drained { true }
            #expect(logs[i].replayed.map(\.key) == expected.map(\.key), "\(c.name) final window (seed \(seed))")
            #expect(logs[i].replayed.map(\.value) == expected.map(\.value), "\(c.name) final values (seed \(seed))")
            #expect(logs[i].replayErrors.count == 0, "\(c.name): \(logs[i].replayErrors.prefix(3)) (seed \(seed))")
            #expect(changeLogs[i].errors.count == 0, "\(c.name) change sets: \(changeLogs[i].errors.prefix(3)) (seed \(seed))")
            #expect(changeLogs[i].results.map(\.key) == expected.map(\.key), "\(c.name) change-set results (seed \(seed))")
        }
        let expected = ReferenceModel.listenerResult(model.root, at: location, nil)
        let remoteDeadline = Date().addingTimeInterval(10)
        while await self.drained({ remote.replayed.map(\.key) != expected.map(\.key) || remote.replayed.map(\.value) != expected.map(\.value) }),
            Date() < remoteDeadline
        {
            try await Task.sleep(for: .milliseconds(20))
        }
        _ = await self.drained { true }
        #expect(remote.replayed.map(\.key) == expected.map(\.key), "the other client's window (seed \(seed))")
        #expect(remote.replayed.map(\.value) == expected.map(\.value), "the other client's values (seed \(seed))")
        #expect(remote.replayErrors.count == 0, "the other client: \(remote.replayErrors.prefix(3)) (seed \(seed))")
        #expect(remote.events.filter { $0.kind == .value }.count > writes / 2, "the other client heard the changes")
        withExtendedLifetime(tokens) {}
        // Instances are kept per URL for the process: once this suite's eddyd is gone, they must
        // not reconnect to another suite's eddyd that reuses its port.
        database.goOffline()
        remoteDatabase.goOffline()
    }

    /// Waits until the child events of every unlimited view replay to `root`'s window: a change
    /// another client made has reached this client's views. The bound (60 s, as `Recorder`'s)
    /// is for liveness under `make test`'s load; a view that never gets there fails the step.
    private func waitUntilShown(_ root: Value, at location: Path, cases: [Case], logs: [EventLog]) async throws {
        let windows = cases.map { ReferenceModel.listenerResult(root, at: location, $0.model) }
        let deadline = Date().addingTimeInterval(60)
        while await self.drained({ cases.indices.contains { !cases[$0].limited && !logs[$0].shows(windows[$0]) } }), Date() < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Runs `body` on the callback queue after everything queued before it.
    private func drained<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in self.queue.async { continuation.resume(returning: body()) } }
    }
}
