// `GET /metrics`: every figure in the Prometheus text format (version 0.0.4).
//
// Two sources, one registry: what swift-metrics recorded as it happened (writes, commit groups,
// fsync and query times, subscriptions, events; `EngineMetrics`, `ServerMetrics`), and gauges
// read at scrape time, set here just before the registry is written out:
// - per open namespace: `eddy_index_builds_in_progress`, `eddy_rocksdb_memtable_bytes`,
//   `eddy_rocksdb_sst_bytes`, `eddy_rocksdb_pending_compaction_bytes`,
//   `eddy_rocksdb_write_stopped`, `eddy_rocksdb_delayed_write_rate_bytes`, `eddy_log_bytes`,
//   `eddy_log_last_entry_timestamp_seconds`, `eddy_log_retained_since_timestamp_seconds`;
// - on a follower: `eddy_follower_connected` (to its leader), `eddy_replica_lag_seconds` (how far
//   its replica is behind the leader's last entry), `eddy_follower_namespaces_replicating`,
//   `_waiting` and `_parked` (namespace sessions running, waiting for one, parked); on a leader: `eddy_followers_connected` and
//   `eddy_replication_connections_open`, `eddy_replication_connections_refused_total` (at
//   `--replication-connections-max`), per follower `eddy_follower_lag_seconds{follower}` and
//   `eddy_follower_lag_entries{follower}`
//   (entries after the follower's last applied one, counted up to `lagEntriesCountMax`: the
//   gauge saturates there, as a follower that far behind is simply far behind);
// - the block cache all namespaces share: `eddy_rocksdb_block_cache_capacity_bytes` and
//   `eddy_rocksdb_block_cache_used_bytes`;
// - the process: `eddy_process_resident_memory_bytes`, `eddy_process_open_fds`.
// A scrape costs a few RocksDB property reads per namespace and a directory listing of
// /proc/self/fd: nothing on the write path.

import EddyEngine
import EddyModel
import EddyReplication
import EddyStorage
import Foundation
import Prometheus
import Synchronization

public final class MetricsEndpoint: Sendable {
    let registry: PrometheusCollectorRegistry
    let data: DataDirectory
    let replication: ReplicationRole
    private let followerLagGauges = Mutex<[String: [Gauge]]>([:])
    /// Where `eddy_follower_lag_entries` stops counting.
    static let lagEntriesCountMax = 100_000

    /// A leader's replication connections (nil on a follower).
    let replicationConnections: ReplicationConnectionCap?
    /// What `eddy_replication_connections_refused_total` has counted so far.
    private let refusedCounted = Mutex(0)

    init(
        registry: PrometheusCollectorRegistry, data: DataDirectory, replication: ReplicationRole,
        replicationConnections: ReplicationConnectionCap? = nil
    ) {
        self.registry = registry
        self.data = data
        self.replication = replication
        self.replicationConnections = replicationConnections
    }

    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The text of one scrape.
    func render() -> [UInt8] {
        self.updateScrapeGauges()
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 << 10)
        self.registry.emit(into: &buffer)
        return buffer
    }

    private func gauge(_ name: String, _ labels: [(String, String)], _ value: Double?) {
        guard let value else { return }
        self.registry.makeGauge(name: name, labels: labels).set(value)
    }

    private func updateScrapeGauges() {
        self.data.forEachOpenEngine { lease in
            let (namespace, engine) = (lease.namespace, lease.engine)
            let labels = [("namespace", namespace)]
            let building = engine.indexStatus().count { $0.state == .building }
            self.gauge("eddy_index_builds_in_progress", labels, Double(building))
            let figures = engine.storageFigures()
            self.gauge("eddy_rocksdb_memtable_bytes", labels, figures.memtableBytes.map { Double($0) })
            self.gauge("eddy_rocksdb_sst_bytes", labels, figures.sstBytes.map { Double($0) })
            self.gauge("eddy_rocksdb_pending_compaction_bytes", labels, figures.pendingCompactionBytes.map { Double($0) })
            self.gauge("eddy_rocksdb_write_stopped", labels, figures.writesStopped.map { Double($0) })
            self.gauge("eddy_rocksdb_delayed_write_rate_bytes", labels, figures.delayedWriteRateBytesPerSecond.map { Double($0) })
            self.gauge("eddy_log_bytes", labels, figures.logBytes.map { Double($0) })
            self.gauge("eddy_log_last_entry_timestamp_seconds", labels, figures.lastEntryMilliseconds.map { Double($0) / 1000 })
            self.gauge("eddy_log_retained_since_timestamp_seconds", labels, figures.prunedThroughMilliseconds.map { Double($0) / 1000 })
        }
        let namespaces = self.data.namespaceFigures
        self.gauge("eddy_namespaces_open", [], Double(namespaces.open))
        self.gauge("eddy_namespaces_closed_for_room", [], Double(namespaces.closedForRoom))
        if let cache = self.data.blockCache {
            self.gauge("eddy_rocksdb_block_cache_capacity_bytes", [], Double(cache.capacityBytes))
            self.gauge("eddy_rocksdb_block_cache_used_bytes", [], Double(cache.usedBytes))
        }
        self.updateReplicationGauges()
        if let cap = self.replicationConnections {
            self.gauge("eddy_replication_connections_open", [], Double(cap.openCount))
            let refused = cap.refusedCount
            let counter = self.registry.makeCounter(name: "eddy_replication_connections_refused_total", labels: [])
            let delta = self.refusedCounted.withLock { counted in
                defer { counted = refused }
                return refused - counted
            }
            if delta > 0 { counter.increment(by: Int64(delta)) }
        }
        self.gauge("eddy_process_resident_memory_bytes", [], ProcessFigures.residentBytes().map { Double($0) })
        self.gauge("eddy_process_open_fds", [], ProcessFigures.openFileDescriptors().map { Double($0) })
    }

    private func updateReplicationGauges() {
        guard let engine = try? self.data.engine(namespace: DataDirectory.defaultNamespace, create: false),
            case .object(let status)? = try? self.replication.status(engine, namespace: DataDirectory.defaultNamespace)
        else { return }
        switch self.replication {
        case .follower(let supervisor):
            self.gauge("eddy_follower_connected", [], status["connected"] == .bool(true) ? 1 : 0)
            let figures = supervisor.namespaceFigures
            self.gauge("eddy_follower_namespaces_replicating", [], Double(figures.running))
            self.gauge("eddy_follower_namespaces_waiting", [], Double(figures.waiting))
            self.gauge("eddy_follower_namespaces_parked", [], Double(figures.parked))
            if case .number(let lag)? = status["lagMilliseconds"] { self.gauge("eddy_replica_lag_seconds", [], lag / 1000) }
        case .leader:
            guard case .object(let followers)? = status["followers"] else { return }
            // The registry lists the followers connected now.
            self.gauge("eddy_followers_connected", [], Double(followers.count))
            var current: [String: [Gauge]] = [:]
            for (name, follower) in followers {
                guard case .object(let fields) = follower, case .number(let lag)? = fields["lagMilliseconds"] else { continue }
                let seconds = self.registry.makeGauge(name: "eddy_follower_lag_seconds", labels: [("follower", name)])
                seconds.set(lag / 1000)
                current[name] = [seconds]
                var applied: LogID? = nil
                if case .string(let id)? = fields["applied"] { applied = LogID(id) }
                if let behind = try? engine.countLogEntries(after: applied, countMax: Self.lagEntriesCountMax) {
                    let entries = self.registry.makeGauge(name: "eddy_follower_lag_entries", labels: [("follower", name)])
                    entries.set(Double(behind))
                    current[name]?.append(entries)
                }
            }
            // A follower that went away takes its lag with it (no stale series to alert on).
            let gone = self.followerLagGauges.withLock { previous in
                defer { previous = current }
                return previous.filter { current[$0.key] == nil }.flatMap(\.value)
            }
            for gauge in gone { self.registry.unregisterGauge(gauge) }
        }
    }
}

/// This process's resident memory and open descriptors, from /proc (nil elsewhere).
enum ProcessFigures {
    static func residentBytes() -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = UInt64(fields[1]) else { return nil }
        return pages * UInt64(sysconf(Int32(_SC_PAGESIZE)))
    }

    static func openFileDescriptors() -> Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")).map { $0.count }
    }
}
