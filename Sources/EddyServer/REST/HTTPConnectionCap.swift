// At most `max` open HTTP connections (`--http-connections-max`): at the cap, Hummingbird stops
// accepting and new clients wait in the listen backlog until one closes, instead of the
// process running out of file descriptors. Reaching the cap is logged (at most every 10 s, so
// a server that stays at its cap does not flood the log), and so is leaving it after that.
// The counts also tell `HeapTrimmer` when a crowd of connections has left.

import HummingbirdCore
import Logging

struct HTTPConnectionCap: AvailableConnectionsDelegate {
    let max: Int
    let logger: Logger
    var open = 0
    var atCap = false
    var lastLogged: ContinuousClock.Instant? = nil

    init(max: Int, logger: Logger) {
        precondition(max > 0)
        self.max = max
        self.logger = logger
    }

    mutating func connectionOpened() {
        self.open += 1
        HeapTrimmer.shared.noteOpened(self.open)
        if self.open >= self.max, !self.atCap, self.lastLogged.map({ ContinuousClock.now - $0 >= .seconds(10) }) ?? true {
            self.atCap = true
            self.lastLogged = .now
            self.logger.warning(
                "HTTP connection cap reached: \(self.open) open; new connections wait until one closes (--http-connections-max \(self.max))")
        }
    }

    mutating func connectionClosed() {
        self.open -= 1
        HeapTrimmer.shared.noteOpenConnections(self.open)
        if self.atCap, self.open < self.max {
            self.atCap = false
            self.logger.info("HTTP connections below the cap again; accepting", metadata: ["eddy.open": "\(self.open)"])
        }
    }

    func isAcceptingNewConnections() -> Bool { self.open < self.max }
}

#if canImport(Glibc)
    import Glibc
#endif

extension HTTPConnectionCap {
    /// `requested`, lowered to leave room for RocksDB's files, the native and replication
    /// sockets and their clients within the file-descriptor limit (whose soft value is raised
    /// to the hard one first, as daemons do).
    static func fitting(_ requested: Int, logger: Logger) -> Int {
        #if canImport(Glibc)
            var limit = rlimit()
            guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return requested }
            if limit.rlim_cur < limit.rlim_max {
                var raised = limit
                raised.rlim_cur = limit.rlim_max
                if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
            }
            let room = Int(clamping: limit.rlim_cur) - 1024
            let fitted = Swift.min(requested, Swift.max(16, room))
            if fitted < requested {
                logger.warning(
                    "http-connections-max lowered to fit the file-descriptor limit",
                    metadata: ["eddy.requested": "\(requested)", "eddy.effective": "\(fitted)", "eddy.nofile": "\(limit.rlim_cur)"])
            }
            return fitted
        #else
            return requested
        #endif
    }
}
