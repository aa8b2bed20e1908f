// A follower replicates every namespace of its leader: one `FollowerService` (its own connection
// and thread) per namespace. At start: the default namespace and every namespace already in the
// data directory (bootstrapped before the daemon serves; see EddyServer). While running: the
// default namespace's connection hands over the leader's namespace list (its welcome, then a
// heartbeat whenever the list changes), and each namespace not replicated yet gets a service
// that first bootstraps it (a snapshot when the leader's log no longer starts at the beginning).
// Until then a client asking that follower for the namespace gets `notFound`.
//
// Namespaces are never dropped on a leader (Eddy has no drop), so a service, once started, runs
// until shutdown. One that ends with an error (a replica holding entries that needs a snapshot
// while open: its position was pruned while the connection was down) stops the others and ends
// the daemon with that error, as a lone follower did: the next start (systemd's restart)
// bootstraps it. An empty replica in that state is bootstrapped in place (FollowerService).
//
// Bounded: at most `Limits.namespacesOpenMax` services (namespaces beyond are logged, not
// replicated).

import EddyEngine
import EddyModel
import Logging
import ServiceLifecycle
import Synchronization

public final class FollowerSupervisor: Service, Sendable {
    public let leader: String
    let name: String
    let data: DataDirectory
    let secret: String?
    let caFile: String?
    /// A cluster's follower (see `FollowerService.endsOnAnotherHistory`).
    let endsOnAnotherHistory: Bool
    let logger: Logger
    private let services = Mutex<[String: FollowerService]>([:])
    private let added: AsyncStream<FollowerService>
    private let addedContinuation: AsyncStream<FollowerService>.Continuation

    public init(
        leader: String, name: String, data: DataDirectory, secret: String? = nil, caFile: String? = nil, endsOnAnotherHistory: Bool = false,
        logger: Logger
    ) {
        self.endsOnAnotherHistory = endsOnAnotherHistory
        self.leader = leader
        self.name = name
        self.data = data
        self.secret = secret
        self.caFile = caFile
        self.logger = logger
        (self.added, self.addedContinuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)  // at most namespacesOpenMax
        for namespace in Set([DataDirectory.defaultNamespace] + data.namespacesOnDisk()).sorted() {
            self.start(namespace, bootstrapFirst: false)
        }
    }

    /// The default namespace's replication status (the daemon's connection to its leader).
    public var status: FollowerService.Status { self.status(namespace: DataDirectory.defaultNamespace) }

    /// A namespace's replication status (not connected yet for one not replicated yet).
    public func status(namespace: String) -> FollowerService.Status {
        self.services.withLock { $0[namespace] }?.status ?? FollowerService.Status()
    }

    /// The namespaces replicated (or being bootstrapped) now.
    public var namespaces: [String] { self.services.withLock { $0.keys.sorted() } }

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
                    }
                }
            } onGracefulShutdown: {
                self.addedContinuation.finish()
            }
            try await group.waitForAll()
        }
    }

    /// Stops every service (started or not) and takes no new one.
    private func stopAll() {
        self.addedContinuation.finish()
        for service in self.services.withLock({ Array($0.values) }) { service.stop() }
    }

    private func discovered(_ namespaces: [String]) {
        for namespace in namespaces where (try? DataDirectory.validateNamespace(namespace)) != nil {
            self.start(namespace, bootstrapFirst: true)
        }
    }

    private func start(_ namespace: String, bootstrapFirst: Bool) {
        let onNamespaces: @Sendable ([String]) -> Void
        if namespace == DataDirectory.defaultNamespace {
            onNamespaces = { [weak self] names in self?.discovered(names) }
        } else {
            onNamespaces = { _ in }
        }
        let service = FollowerService(
            leader: self.leader, name: self.name, data: self.data, namespace: namespace, bootstrapFirst: bootstrapFirst,
            secret: self.secret, caFile: self.caFile, endsOnAnotherHistory: self.endsOnAnotherHistory, logger: self.logger,
            onNamespaces: onNamespaces)
        let admitted: Bool? = self.services.withLock { services in
            guard services[namespace] == nil else { return nil }
            guard services.count < Limits.namespacesOpenMax else { return false }
            services[namespace] = service
            return true
        }
        switch admitted {
        case nil: return
        case false?:
            self.logger.error(
                "not replicating namespace \(namespace): namespacesOpenMax (\(Limits.namespacesOpenMax)) are replicated already")
        case true?:
            if bootstrapFirst { self.logger.info("replicating a new namespace of the leader", metadata: ["eddy.ns": "\(namespace)"]) }
            self.addedContinuation.yield(service)
        }
    }
}
