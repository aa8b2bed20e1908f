// The HTTP listener's presence connections: Firebase's onDisconnect for clients that speak REST
// and SSE (the emulator set-up). A client opens one with `GET /.ondisconnect.json` as an event
// stream; the server names it with a random id and holds its registered writes here until the
// stream ends, however it ends (the client closes it or goes offline, is killed, its network
// drops; eddyd stops), and then runs them (`OnDisconnectRuns`), as the native protocol does when
// a connection ends.
//
// Invariants:
// - An id is 128 random bits in hex: knowing one is the only way to register on it. A write
//   runs with the identity of the request that registered it, so a stranger's id gives no
//   rights beyond its own.
// - A session exists exactly while its stream is open: `close` takes its writes once; a later
//   registration on the id is refused (`notFound`), so nothing is registered on an ended one.
// - Bounded: at most `sessionsMax` open sessions (each also holds an HTTP connection, itself
//   capped by --http-connections-max), each bounded by `OnDisconnectList`, all of them together
//   by the daemon-wide budget (`OnDisconnectRuns.budget`).

import EddyModel
import Synchronization

final class OnDisconnectSessions: Sendable {
    static let sessionsMax = 65_536

    private let sessions = Mutex<[String: OnDisconnectList]>([:])

    var count: Int { self.sessions.withLock { $0.count } }

    /// A new session's id.
    func open() throws(EddyError) -> String {
        var generator = SystemRandomNumberGenerator()
        let id = (0..<2).map { _ in Self.hex(generator.next()) }.joined()
        try self.sessions.withLock { (sessions: inout [String: OnDisconnectList]) throws(EddyError) in
            guard sessions.count < Self.sessionsMax else {
                throw EddyError(.busy, "\(Self.sessionsMax) onDisconnect connections are open (sessionsMax); retry later")
            }
            sessions[id] = OnDisconnectList()
        }
        return id
    }

    func register(_ write: OnDisconnectWrite, session id: String, budget: MemoryBudget) throws(EddyError) {
        try self.sessions.withLock { (sessions: inout [String: OnDisconnectList]) throws(EddyError) in
            guard sessions[id] != nil else { throw Self.unknown(id) }
            try sessions[id]!.append(write, budget: budget)
        }
    }

    /// Drops the session's writes of `namespace` at or below `location`; returns how many.
    func cancel(session id: String, namespace: String, at location: Path, budget: MemoryBudget) throws(EddyError) -> Int {
        try self.sessions.withLock { (sessions: inout [String: OnDisconnectList]) throws(EddyError) in
            guard sessions[id] != nil else { throw Self.unknown(id) }
            return try sessions[id]!.cancel(namespace: namespace, at: location, budget: budget)
        }
    }

    /// Ends the session; returns its writes, in order (none on a second call).
    func close(_ id: String, budget: MemoryBudget) -> [OnDisconnectWrite] {
        self.sessions.withLock { sessions in
            var list = sessions.removeValue(forKey: id)
            return list?.takeAll(budget: budget) ?? []
        }
    }

    private static func unknown(_ id: String) -> EddyError {
        EddyError(
            .notFound,
            "no open onDisconnect connection \(id): it ended (its writes have run) or never existed; open one with GET /.ondisconnect.json (Accept: text/event-stream) and register again")
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
