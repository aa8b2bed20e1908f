// The engine's figures for operators, through swift-metrics (eddyd exports them as Prometheus
// text on `/metrics`; without a metrics backend bootstrapped they cost a no-op call). One set
// per engine, labelled with its namespace; made once at open, never on the write path.
//
// - `eddy_writes_total{namespace,outcome}` and `eddy_write_bytes_total{namespace,outcome}`:
//   every write a client submitted, by how it ended: `committed`, `precondition_failed`
//   (if-match), or the error code that refused it (`permissionDenied`, `invalidArgument`, ...).
//   Bytes are the validator's estimate of the write's JSON.
// - `eddy_commit_group_writes{namespace}`: writes per commit group (one RocksDB batch).
// - `eddy_commit_write_seconds{namespace}`: writing one group's batch (with its fsync when the
//   write was alone); `eddy_fsync_seconds{namespace}`: the syncer's WAL fsync for pipelined groups.
// - `eddy_query_seconds{namespace,kind}`: a query's read, `kind` `indexed` (served by a
//   declared `.indexOn` index) or `unindexed` (read from the tree in key order: `orderByKey`,
//   limit-only queries; Firebase refuses other orders without an index).
// - `eddy_listeners{namespace}`: engine listeners attached now (event streams, native
//   subscriptions); one that outlives its client shows here.
// - `eddy_listen_order_expired_total{namespace}`: listens whose reserved place in the order of
//   writes (`ListenOrder`) expired before the listen was made: the writes after it waited the
//   whole `CommitQueue.reservationHoldMax` (50 ms). Should stay 0; it rises when subscribe
//   requests wait long in their connection's queue.

import CoreMetrics
import EddyModel
import Metrics

final class EngineMetrics: Sendable {
    private struct OutcomeCounters: Sendable {
        let writes: Counter
        let bytes: Counter
    }

    let namespace: String
    private let committed: OutcomeCounters
    private let preconditionFailed: OutcomeCounters
    let commitGroupWrites: Recorder
    let commitWrite: Metrics.Timer
    let fsync: Metrics.Timer
    let indexedQuery: Metrics.Timer
    let unindexedQuery: Metrics.Timer
    /// `eddy_listeners{namespace}`: engine listeners attached now (SSE streams, native
    /// subscriptions and the server's own, such as a follower's subscribers'), so one that
    /// outlives its client shows.
    let listeners: Gauge
    /// `eddy_listen_order_expired_total{namespace}` (see the top).
    let listenOrdersExpired: Counter

    init(namespace: String) {
        self.namespace = namespace
        self.committed = Self.counters(namespace, outcome: "committed")
        self.preconditionFailed = Self.counters(namespace, outcome: "precondition_failed")
        let labels = [("namespace", namespace)]
        self.commitGroupWrites = Recorder(label: "eddy_commit_group_writes", dimensions: labels, aggregate: true)
        self.commitWrite = Metrics.Timer(label: "eddy_commit_write_seconds", dimensions: labels, preferredDisplayUnit: .seconds)
        self.fsync = Metrics.Timer(label: "eddy_fsync_seconds", dimensions: labels, preferredDisplayUnit: .seconds)
        self.indexedQuery = Metrics.Timer(
            label: "eddy_query_seconds", dimensions: labels + [("kind", "indexed")], preferredDisplayUnit: .seconds)
        self.unindexedQuery = Metrics.Timer(
            label: "eddy_query_seconds", dimensions: labels + [("kind", "unindexed")], preferredDisplayUnit: .seconds)
        self.listeners = Gauge(label: "eddy_listeners", dimensions: labels)
        self.listenOrdersExpired = Counter(label: "eddy_listen_order_expired_total", dimensions: labels)
    }

    private static func counters(_ namespace: String, outcome: String) -> OutcomeCounters {
        let labels = [("namespace", namespace), ("outcome", outcome)]
        return OutcomeCounters(
            writes: Counter(label: "eddy_writes_total", dimensions: labels),
            bytes: Counter(label: "eddy_write_bytes_total", dimensions: labels))
    }

    /// Counts one write by how it ended.
    func recordWrite(_ result: Result<WriteOutcome, EddyError>, bytes: Int) {
        let counters: OutcomeCounters
        switch result {
        case .success(.committed): counters = self.committed
        case .success(.preconditionFailed): counters = self.preconditionFailed
        case .failure(let error): counters = Self.counters(self.namespace, outcome: error.code.description)  // rare: made on demand
        }
        counters.writes.increment()
        counters.bytes.increment(by: bytes)
    }

    /// Records one commit group's size.
    func recordGroup(writes: Int) {
        self.commitGroupWrites.record(writes)
    }

    /// Counts listen places (`ListenOrder`) that expired before their listen was made.
    func recordListenOrdersExpired(_ count: Int) {
        self.listenOrdersExpired.increment(by: count)
    }

    /// Counts a write refused before it was queued (invalid input).
    func recordRefusal(_ error: EddyError) {
        self.recordWrite(.failure(error), bytes: 0)
    }

    /// The query timer for indexed (a declared index) or unindexed (key order) queries.
    func queryTimer(indexed: Bool) -> Metrics.Timer { indexed ? self.indexedQuery : self.unindexedQuery }
}

extension Metrics.Timer {
    /// Records the time since `start`.
    func recordSince(_ start: ContinuousClock.Instant) {
        self.record(duration: ContinuousClock.now - start)
    }
}
