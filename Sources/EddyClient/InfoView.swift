// The client's own locations under `.info`, as Firebase exposes them: `.info/connected` (true
// while the connection to eddyd is up) and `.info/serverTimeOffset` (0: Eddy's client does not
// estimate the server's clock). Observers of `.info/connected` hear false or true at once and
// then every change; observing it makes the client connect, as in Firebase. An observer of
// `.info` itself also gets child events, as Firebase's: `childAdded` for `connected` and
// `serverTimeOffset` (key order) when it attaches, `childChanged` for `connected` at each change.

import EddyModel
import EddyProtocol
import Foundation
import Synchronization

final class InfoView: Sendable {
    private struct State {
        var registrations: [QueryView.Registration] = []
        var paths: [DatabaseHandle: Path] = [:]
        var connected = false
        /// Run once the connection is up (`whenConnected`); at most `waitersMax`.
        var waiters: [@Sendable () -> Void] = []
    }

    static let waitersMax = 10_000

    var isConnected: Bool { self.state.withLock { $0.connected } }

    private let state = Mutex(State())

    static func isInfo(_ path: Path) -> Bool { path.keys.first == ".info" }

    func add(_ registration: QueryView.Registration, at path: Path, ref: DatabaseReference) {
        let database = ref.database
        let connected = self.state.withLock { state -> Bool in
            state.registrations.append(registration)
            state.paths[registration.handle] = path
            if registration.eventType == .value {
                let snapshot = DataSnapshot(ref: ref, value: Self.value(at: path, connected: state.connected))
                database.deliver { registration.block.value(snapshot, nil) }
            } else if registration.eventType == .childAdded, path.keys.count == 1 {
                // `.info`'s children in key order, each with the key before it.
                var previous: String? = nil
                for key in Self.childKeys {
                    let child = DataSnapshot(ref: ref.child(key), value: Self.value(at: path.appending(key), connected: state.connected))
                    let before = previous
                    database.deliver { registration.block.value(child, before) }
                    previous = key
                    if registration.once { break }
                }
            }
            return state.connected
        }
        if registration.once { self.remove(registration.handle) }
        if !connected { database.connection.request(.status, .object([:])) { _ in } }
    }

    func remove(_ handle: DatabaseHandle) {
        self.state.withLock { state in
            state.registrations.removeAll { $0.handle == handle }
            state.paths.removeValue(forKey: handle)
        }
    }

    func removeAll(at path: Path) {
        self.state.withLock { state in
            let handles = state.paths.filter { $0.value == path }.map(\.key)
            for handle in handles { state.paths.removeValue(forKey: handle) }
            state.registrations.removeAll { handles.contains($0.handle) }
        }
    }

    func owns(_ handle: DatabaseHandle) -> Bool { self.state.withLock { $0.paths[handle] != nil } }

    /// Runs `block` now when connected, else once the connection is up; false (and `block`
    /// never runs) when `waitersMax` already wait.
    func whenConnected(_ block: @escaping @Sendable () -> Void) -> Bool {
        let now = self.state.withLock { state -> Bool? in
            if state.connected { return true }
            guard state.waiters.count < Self.waitersMax else { return nil }
            state.waiters.append(block)
            return false
        }
        guard let now else { return false }
        if now { block() }
        return true
    }

    /// The connection came up or went down: a value event for each observer whose value changed.
    func connectionChanged(_ connected: Bool, in database: Database) {
        let waiters = self.state.withLock { state -> [@Sendable () -> Void] in
            guard connected else { return [] }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        defer { for waiter in waiters { waiter() } }
        self.state.withLock { state in
            guard state.connected != connected else { return }
            state.connected = connected
            for registration in state.registrations {
                guard let path = state.paths[registration.handle], path.keys.count == 1 || path.keys[1] == "connected" else { continue }
                let ref = DatabaseReference(database: database, path: path)
                switch registration.eventType {
                case .value:
                    let snapshot = DataSnapshot(ref: ref, value: Self.value(at: path, connected: connected))
                    database.deliver { registration.block.value(snapshot, nil) }
                case .childChanged where path.keys.count == 1:
                    // `connected` is `.info`'s first child: no key before it.
                    let child = DataSnapshot(ref: ref.child("connected"), value: .bool(connected))
                    database.deliver { registration.block.value(child, nil) }
                default:
                    continue
                }
            }
        }
    }

    /// What `.info` holds at `path` now (a one-time read: `getData`).
    func current(at path: Path) -> Value {
        Self.value(at: path, connected: self.isConnected)
    }

    /// `.info`'s children, in key order.
    private static let childKeys = ["connected", "serverTimeOffset"]

    private static func value(at path: Path, connected: Bool) -> Value {
        let info: Value = .object(["connected": .bool(connected), "serverTimeOffset": .number(0)])
        return info.child(at: Path(validatedKeys: Array(path.keys.dropFirst())))
    }
}
