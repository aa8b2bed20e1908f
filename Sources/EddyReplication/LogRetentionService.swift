// Applies the log retention policy (`LogRetention`, documented with `Engine.pruneLog`) to every
// open database every `interval`. On a leader, entries a connected follower still needs are kept
// (up to the hard cap): pruning never starts before the oldest id a follower applied, and not at
// all while a follower that applied nothing yet is connected. Followers prune their own copies
// by the same policy (they serve resumes and `eddy tail` from them).

import EddyEngine
import EddyModel
import Foundation
import Logging
import ServiceLifecycle

public struct LogRetentionService: Service {
    let data: DataDirectory
    let retention: LogRetention
    let interval: Duration
    /// The leader's followers; nil on a follower.
    let registry: FollowerRegistry?
    let logger: Logger

    public init(data: DataDirectory, retention: LogRetention, interval: Duration, registry: FollowerRegistry?, logger: Logger) {
        self.data = data
        self.retention = retention
        self.interval = interval
        self.registry = registry
        self.logger = logger
    }

    public func run() async throws {
        // The wait between passes ends at graceful shutdown too (a plain sleep held every
        // SIGTERM stop for up to `interval`).
        try? await cancelWhenGracefulShutdown {
            try await self.prunePeriodically()
        }
    }

    private func prunePeriodically() async throws {
        while !Task.isCancelled {
            try await Task.sleep(for: self.interval)
            self.data.forEachOpenEngine { lease in
                let (namespace, engine) = (lease.namespace, lease.engine)
                let keep: LogID?
                switch self.registry?.oldestApplied(namespace: namespace) {
                case .none: keep = nil
                case .some(.none): keep = try? engine.firstLogID()
                case .some(.some(let id)): keep = id
                }
                do {
                    try engine.pruneLog(self.retention, keep: keep, nowMilliseconds: UInt64(Date().timeIntervalSince1970 * 1000))
                } catch {
                    self.logger.error("pruning the log failed", metadata: ["eddy.ns": "\(namespace)", "eddy.error": "\(error)"])
                }
            }
        }
    }
}
