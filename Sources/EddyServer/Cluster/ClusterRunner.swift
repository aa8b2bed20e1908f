// A cluster node (`eddyd serve --cluster NAME --etcd URLS`): the election (ClusterElection, on
// its own thread) decides the role, and the daemon runs in it, one `EddyServer.serve` run per
// role on the same data directory:
// - leader: the log server for followers; local writes pass only while the election proves the
//   lease (`EngineOptions.writeFence`), so a leader cut off from etcd stops taking writes
//   within its TTL, before another node can be elected.
// - follower of the elected leader: replicates from the leader record's replication address,
//   answers writes with 307 to its HTTP URL.
// When the leader changes, the run stops gracefully and the next one starts: a promoted
// follower reopens its replica as the leader (it keeps replicating "the same database", its
// original leader's id), a deposed leader rejoins as a follower and resumes after its last
// applied entry. A run that ends on its own (SIGTERM, SIGINT, a failure) ends the node; the
// election then revokes the lease, so another node takes over without waiting for the TTL.
// A leadership lost and regained by the same node (a new term) keeps the run: the fence held
// the writes in between.

import EddyCluster
import EddyEngine
import EddyModel
import Foundation
import Logging
import Prometheus
import Synchronization
import UnixSignals

public enum ClusterRunner {
    enum Event: Sendable {
        case role(ClusterElection.Role)
        case runEnded(ServeRun, EddyError?)
        /// SIGTERM or SIGINT: the node ends, with or without a run open.
        case terminate
    }

    /// The role a run was started in: what decides whether a new role needs a new run.
    enum RunRole: Equatable {
        case leader
        case follower(node: String, replication: String)

        init?(_ role: ClusterElection.Role) {
            switch role {
            case .leader: self = .leader
            case .follower(let leader?, _):
                guard let replication = leader.replication else { return nil }
                self = .follower(node: leader.node, replication: replication)
            case .follower(nil, _): return nil
            }
        }
    }

    /// Runs the node until a signal ends it. `onRun` is called with each run's role as it starts.
    public static func run(
        _ configuration: ServeConfiguration, logger: Logger, metricsRegistry: PrometheusCollectorRegistry, logLevel: LogLevelControl,
        onListening: @escaping @Sendable (_ http: String, _ nativeTCP: String?, _ role: String) -> Void
    ) async throws(EddyError) {
        try configuration.validate()
        guard let cluster = configuration.cluster else { throw EddyError(.invalidArgument, "no --cluster") }
        let etcd = try EtcdClient(urls: configuration.etcdEndpoints)
        let node = configuration.nodeID ?? ProcessInfo.processInfo.hostName
        let replication =
            configuration.replicationListen ?? URL(fileURLWithPath: configuration.effectiveReplicationSocketPath).standardizedFileURL.path
        let scheme = configuration.tlsCertificateFile == nil ? "http" : "https"
        let http = configuration.advertiseHTTP ?? "\(scheme)://\(configuration.httpHost):\(configuration.httpPort)"
        let current = Mutex<ServeRun?>(nil)
        let (onDisk, onDiskTerm) = Self.newestEntryOnDisk(configuration)
        let events = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let election = try ClusterElection(
            .init(cluster: cluster, node: node, leaseTTLSeconds: configuration.leaseTTLSeconds, http: http, replication: replication),
            etcd: etcd, logger: logger,
            applied: {
                // The open run's newest entry; before the first run, what is on disk.
                guard let data = current.withLock({ $0?.data }) else { return onDisk }
                return (try? data.engine(namespace: DataDirectory.defaultNamespace, create: false).lastLogID()) ?? onDisk
            },
            appliedTerm: {
                guard let data = current.withLock({ $0?.data }) else { return onDiskTerm }
                return (try? data.engine(namespace: DataDirectory.defaultNamespace, create: false).newestTerm) ?? onDiskTerm
            },
            onChange: { events.continuation.yield(.role($0)) })
        // The node's own signal handling: a run's service group traps SIGTERM and SIGINT while it
        // runs, but between runs (no leader elected yet, a role change, a follower run starting
        // again) they would be ignored (ServiceLifecycle leaves them SIG_IGN), so the node listens
        // to them for its whole life too. Trapped before the election starts: a SIGTERM as soon
        // as the node tries etcd must end it cleanly, not by the signal's default action.
        let signalSequence = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        let signals = Task {
            for await _ in signalSequence {
                events.continuation.yield(.terminate)
            }
        }
        defer { signals.cancel() }
        // Finished when the election's thread ends (after a graceful stop, its lease revoked).
        let electionEnded = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        Thread.detachNewThread {
            election.run()
            electionEnded.continuation.finish()
        }
        /// Stops the election and waits for its thread: the lease is revoked before the process
        /// exits, so another node takes over at once.
        func leave() async {
            election.stop()
            for await _ in electionEnded.stream {}
        }
        logger.info("joining cluster", metadata: ["eddy.cluster": "\(cluster)", "eddy.node": "\(node)", "eddy.etcd": "\(configuration.etcdEndpoints)"])

        var role = ClusterElection.Role.follower(leader: nil, term: nil)
        var running: (run: ServeRun, role: RunRole)? = nil
        func start(_ runRole: RunRole) {
            var runConfiguration = configuration
            runConfiguration.cluster = nil
            runConfiguration.etcdEndpoints = []
            let run: ServeRun
            let description: String
            switch runRole {
            case .leader:
                runConfiguration.leader = nil
                run = ServeRun(
                    writeFence: {
                        guard let term = election.leaderTerm(), term > 0 else {
                            return .failure(
                                EddyError(.notLeader, "this node is not the leader of cluster \(cluster) now (its etcd lease is not proven); retry"))
                        }
                        return .success(UInt64(term))
                    }, writeRedirect: nil)
                description = "leader of cluster \(cluster)"
            case .follower(let leaderNode, let leaderReplication):
                runConfiguration.leader = leaderReplication
                runConfiguration.syncFollowers = 0
                runConfiguration.followerName = configuration.followerName ?? node
                var redirect: String? = nil
                if case .follower(let record?, _) = role { redirect = record.http }
                run = ServeRun(writeFence: nil, writeRedirect: redirect, discardsAnotherHistory: true)
                description = "follower of \(leaderNode) in cluster \(cluster)"
            }
            current.withLock { $0 = run }
            running = (run, runRole)
            logger.info("starting as \(description)")
            Task {
                var failure: EddyError? = nil
                do {
                    try await EddyServer.serve(
                        runConfiguration, logger: logger, metricsRegistry: metricsRegistry, logLevel: logLevel, run: run,
                        onListening: { address, nativeTCP in onListening(address, nativeTCP, description) })
                } catch let error as EddyError {
                    failure = error
                } catch {
                    failure = EddyError(.internal, "\(error)")
                }
                events.continuation.yield(.runEnded(run, failure))
            }
        }

        var terminating = false

        for await event in events.stream {
            switch event {
            case .terminate:
                terminating = true
                guard let running else {
                    await leave()
                    return
                }
                running.run.stop()  // the node ends when the run has
            case .role(let newRole):
                role = newRole
                guard !terminating, let wanted = RunRole(newRole) else { continue }  // no leader now: keep the run
                if let running {
                    if running.role != wanted { running.run.stop() }  // the next starts when it ended
                } else {
                    start(wanted)
                }
            case .runEnded(let run, let failure):
                guard let ended = running, ended.run === run else { continue }
                running = nil
                current.withLock { $0 = nil }
                if terminating {
                    await leave()
                    if let failure { throw failure }
                    return
                }
                if !run.stopRequested, let failure, case .follower = ended.role {
                    // A follower run that failed (its leader refused it, or went away while it
                    // started) starts again after a second: its bootstrap sets a diverged
                    // replica aside, and the role may have moved on meanwhile.
                    logger.warning("the follower run ended; starting again", metadata: ["eddy.error": "\(failure.message)"])
                    try? await Task.sleep(for: .seconds(1))
                } else if !run.stopRequested {
                    // A signal, or the leader's run failed: the node ends.
                    await leave()
                    if let failure { throw failure }
                    return
                }
                if let wanted = RunRole(role) { start(wanted) }
            }
        }
        await leave()
    }

    /// The default namespace's newest log entry on disk and its term (nil and 0: none, or no
    /// database yet).
    static func newestEntryOnDisk(_ configuration: ServeConfiguration) -> (LogID?, UInt64) {
        let directory = configuration.dataDirectory + "/" + DataDirectory.defaultNamespace
        guard FileManager.default.fileExists(atPath: directory + "/CURRENT"), let log = try? ReadOnlyLog(directory: directory) else {
            return (nil, 0)
        }
        defer { log.close() }
        return ((try? log.lastID()) ?? nil, log.lastTerm())
    }
}
