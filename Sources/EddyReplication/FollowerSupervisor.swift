// A follower replicates every namespace of its leader: one `FollowerService` (its own connection
// and thread) per namespace. At start: the default namespace and every namespace already in the
// data directory (bootstrapped before the daemon serves; see EddyServer). While running: the
// default namespace's connection hands over the leader's namespace list (its welcome, then a
// heartbeat whenever the list changes), and each namespace not replicated yet gets a service
// that first bootstraps it (a snapshot when the leader's log no longer starts at the beginning).
// Until then a client asking that follower for the namespace gets `notFound`.
//
// Namespaces are never dropped on a leader (Eddy has no drop), so a namespace, once known, is
// replicated until shutdown. A service that ends with an error (a replica holding entries that
// needs a snapshot while open: its position was pruned while the connection was down) stops the
// others and ends the daemon with that error, as a lone follower did: the next start (systemd's
// restart) bootstraps it. An empty replica in that state is bootstrapped in place
// (FollowerService).
//
// Any number of namespaces, at most `sessionsMax` sessions at once: each session holds its
// namespace open here and on the leader (where at most `Limits.namespacesOpenMax` are open), so
// the rest wait in `pending`, first come first served. While one waits, a session of another
// namespace that is idle (or has had its turn, `FollowerService.parkAfter`) parks: it ends, and
// the namespace is watched through the default namespace's connection (a `watch` frame with the
// newest entry applied; see NamespaceWatches on the leader). When the leader says a parked
// namespace was written, it waits for a session again. With more namespaces than sessions,
// idle sessions also park while fewer than `spareSessions` are free, so a parked namespace
// written again usually starts at once. After each welcome of the default namespace's
// connection every parked namespace is watched again (a new leader process knows no watch).
// With at most `sessionsMax` namespaces (the default one included) nothing ever parks. The
// default namespace never parks and always has its session.
//
// Bounded: `sessionsMax` services run at once; the tables hold one entry per namespace of the
// leader, which its data directory bounds.

import EddyEngine
import EddyModel
import Logging
import ServiceLifecycle
import Synchronization

public final class FollowerSupervisor: Service, Sendable {
    /// Sessions (connections to the leader, each with its namespace open on both sides) at once.
    /// Below `Limits.namespacesOpenMax`, so the leader and this follower keep room for the
    /// namespaces their clients use.
    public static let sessionsMax = 48

    public let leader: String
    let name: String
    let data: DataDirectory
    let secret: String?
    let caFile: String?
    /// A cluster's follower (see `FollowerService.endsOnAnotherHistory`).
    let endsOnAnotherHistory: Bool
    let logger: Logger
    /// Sessions at once (`sessionsMax`; tests use fewer).
    let sessionsLimit: Int

    private struct Namespaces {
        /// Every namespace known, with its newest service (running, waiting, parked or ended).
        var services: [String: FollowerService] = [:]
        /// Namespaces whose service runs now (at most `sessionsLimit`).
        var running: Set<String> = []
        /// Namespaces waiting for a session, first come first served, each once; and whether
        /// each must be bootstrapped first.
        var pending: [String] = []
        var waiting: [String: Bool] = [:]
        /// Parked namespaces and the newest entry applied in each.
        var parked: [String: LogID?] = [:]
        var accepting = true
    }

    private let table = Mutex(Namespaces())
    /// Whether idle sessions should park (read by every session at every frame; see
    /// `updateParking`).
    private let parkingWanted = Atomic(false)
    private let added: AsyncStream<FollowerService>
    private let addedContinuation: AsyncStream<FollowerService>.Continuation

    public init(
        leader: String, name: String, data: DataDirectory, secret: String? = nil, caFile: String? = nil, endsOnAnotherHistory: Bool = false,
        sessionsMax: Int = FollowerSupervisor.sessionsMax, logger: Logger
    ) {
        self.endsOnAnotherHistory = endsOnAnotherHistory
        self.leader = leader
        self.name = name
        self.data = data
        self.secret = secret
        self.caFile = caFile
        self.logger = logger
        self.sessionsLimit = max(1, sessionsMax)
        (self.added, self.addedContinuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)  // at most sessionsLimit
        // The default namespace first: it always gets a session (its connection carries the
        // namespace list and the watches).
        self.start(DataDirectory.defaultNamespace, bootstrapFirst: false)
        for namespace in data.namespacesOnDisk() where namespace != DataDirectory.defaultNamespace {
            self.start(namespace, bootstrapFirst: false)
        }
    }

    /// The default namespace's replication status (the daemon's connection to its leader).
    public var status: FollowerService.Status { self.status(namespace: DataDirectory.defaultNamespace) }

    /// A namespace's replication status (not connected yet for one not replicated yet).
    public func status(namespace: String) -> FollowerService.Status {
        self.table.withLock { $0.services[namespace] }?.status ?? FollowerService.Status()
    }

    /// The namespaces replicated (running, waiting for a session, parked, or being bootstrapped).
    public var namespaces: [String] { self.table.withLock { $0.services.keys.sorted() } }

    /// How many namespaces have a session now, wait for one, and are parked (metrics).
    public var namespaceFigures: (running: Int, waiting: Int, parked: Int) {
        self.table.withLock { ($0.running.count, $0.waiting.count, $0.parked.count) }
    }

    public func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            await withGracefulShutdownHandler {
                for await service in self.added {
                    group.addTask {
                        do {
                            try await service.run()
                        } catch {
                            // A namespace that needs a restart to be bootstrapped (see the top):
                            // every other namespace stops too, and the error ends the daemon.
                            self.stopAll()
                            throw error
                        }
                        self.ended(service)
                    }
                }
            } onGracefulShutdown: {
                self.stopAccepting()
            }
            try await group.waitForAll()
        }
    }

    private func stopAccepting() {
        self.table.withLock { $0.accepting = false }
        self.addedContinuation.finish()
    }

    /// Stops every service (started or not) and takes no new one.
    private func stopAll() {
        self.stopAccepting()
        for service in self.table.withLock({ Array($0.services.values) }) { service.stop() }
    }

    private func discovered(_ namespaces: [String]) {
        for namespace in namespaces where (try? DataDirectory.validateNamespace(namespace)) != nil {
            self.start(namespace, bootstrapFirst: true)
        }
    }

    /// A namespace not known yet: it waits for a session.
    private func start(_ namespace: String, bootstrapFirst: Bool) {
        let new = self.table.withLock { state -> Bool in
            guard state.services[namespace] == nil else { return false }
            state.services[namespace] = self.makeService(namespace, bootstrapFirst: bootstrapFirst)
            self.wait(&state, namespace, bootstrapFirst: bootstrapFirst)
            return true
        }
        guard new else { return }
        if bootstrapFirst { self.logger.info("replicating a new namespace of the leader", metadata: ["eddy.ns": "\(namespace)"]) }
        self.fillSessions()
    }

    private func wait(_ state: inout Namespaces, _ namespace: String, bootstrapFirst: Bool) {
        guard state.waiting[namespace] == nil, !state.running.contains(namespace) else { return }
        state.pending.append(namespace)
        state.waiting[namespace] = bootstrapFirst
        self.updateParking(state)
    }

    /// Sessions kept free, once there are more namespaces than sessions, so that a parked
    /// namespace written again starts at once rather than after an idle session's next
    /// heartbeat (up to a second).
    static let spareSessions = 4

    /// Idle sessions park while a namespace waits, and, with more namespaces than sessions,
    /// while fewer than `spareSessions` sessions are free.
    private func updateParking(_ state: Namespaces) {
        let spare = min(Self.spareSessions, self.sessionsLimit - 1)
        let wanted =
            !state.waiting.isEmpty || (state.services.count > self.sessionsLimit && state.running.count > self.sessionsLimit - spare)
        self.parkingWanted.store(wanted, ordering: .relaxed)
    }

    private func makeService(_ namespace: String, bootstrapFirst: Bool) -> FollowerService {
        var onNamespaces: @Sendable ([String]) -> Void = { _ in }
        var onWritten: @Sendable ([String]) -> Void = { _ in }
        var onWelcome: @Sendable () -> Void = {}
        var shouldPark: @Sendable () -> Bool = { [weak self] in self?.parkingWanted.load(ordering: .relaxed) ?? false }
        if namespace == DataDirectory.defaultNamespace {
            onNamespaces = { [weak self] names in self?.discovered(names) }
            onWritten = { [weak self] names in self?.written(names) }
            onWelcome = { [weak self] in self?.watchParked() }
            shouldPark = { false }
        }
        return FollowerService(
            leader: self.leader, name: self.name, data: self.data, namespace: namespace, bootstrapFirst: bootstrapFirst,
            secret: self.secret, caFile: self.caFile, endsOnAnotherHistory: self.endsOnAnotherHistory, logger: self.logger,
            onNamespaces: onNamespaces, onWritten: onWritten, onWelcome: onWelcome, shouldPark: shouldPark)
    }

    /// Starts services for waiting namespaces while fewer than `sessionsLimit` run.
    private func fillSessions() {
        let starting = self.table.withLock { state -> [FollowerService] in
            var starting: [FollowerService] = []
            while state.accepting, state.running.count < self.sessionsLimit, !state.pending.isEmpty {
                let namespace = state.pending.removeFirst()
                let bootstrapFirst = state.waiting.removeValue(forKey: namespace) ?? false
                // A namespace's first service was made when it became known; a later one (it
                // parked) is new, as a service runs once.
                var service = state.services[namespace]!
                if service.status.parked || service.hasRun {
                    service = self.makeService(namespace, bootstrapFirst: bootstrapFirst)
                    state.services[namespace] = service
                }
                state.running.insert(namespace)
                starting.append(service)
            }
            self.updateParking(state)
            return starting
        }
        for service in starting { self.addedContinuation.yield(service) }
    }

    /// A service returned: parked (its namespace is watched), or ended for good (stopped, or
    /// replication of that namespace stopped; its status says why). Its session goes to the
    /// next waiting namespace.
    private func ended(_ service: FollowerService) {
        let status = service.status
        let watch: [String: LogID?]? = self.table.withLock { state in
            state.running.remove(service.namespace)
            self.updateParking(state)
            guard status.parked, state.accepting else { return nil }
            state.parked[service.namespace] = status.parkedAt
            return [service.namespace: status.parkedAt]
        }
        if let watch { _ = self.defaultService?.sendWatch(watch) }
        self.fillSessions()
    }

    private var defaultService: FollowerService? { self.table.withLock { $0.services[DataDirectory.defaultNamespace] } }

    /// The leader says these watched namespaces were written: each waits for a session.
    private func written(_ names: [String]) {
        self.table.withLock { state in
            for namespace in names where state.parked.removeValue(forKey: namespace) != nil {
                self.wait(&state, namespace, bootstrapFirst: false)
            }
        }
        self.fillSessions()
    }

    /// Watches every parked namespace on the default namespace's new connection, in frames of
    /// at most 1,024 namespaces.
    private func watchParked() {
        let parked = self.table.withLock { $0.parked }
        guard let service = self.defaultService, !parked.isEmpty else { return }
        let names = parked.keys.sorted()
        for start in stride(from: 0, to: names.count, by: 1024) {
            var chunk: [String: LogID?] = [:]
            for namespace in names[start..<min(start + 1024, names.count)] { chunk[namespace] = parked[namespace]! }
            guard service.sendWatch(chunk) else { return }
        }
    }
}
