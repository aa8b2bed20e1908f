// Folder Storage/: where databases live on disk: the data directory and its lock, namespaces,
// checkpoints for backups.
//
// The data directory of a daemon: one subdirectory per namespace (`?ns=`), each its own
// RocksDB database, plus `eddyd.lock`, an advisory lock (flock) held while a daemon or an
// offline `eddy` command uses the directory, so the two refuse each other clearly.
//
// Namespaces are opened on first use; at most `Limits.namespacesOpenMax` are open at once. When
// one more must open, the least recently used namespace that nobody holds is closed first:
// servers take an `EngineLease` for as long as they use a namespace's engine (a request, a
// native connection, an event stream, a follower's tail), and a namespace with a lease, with an
// index being built, or the default namespace is never closed for room. With every open one
// held, opening another is refused with `busy` (retry once one is let go). A closed namespace
// reopens on its next use (its data is on disk; what its memtables held is replayed from its
// write-ahead log).
// Thread-safety: the open map, leases and use order are guarded by one Mutex. Engines open and
// close outside it (an open replays a write-ahead log, a close flushes memtables: seconds, which
// held up every request of every namespace while the lock was held): a namespace being opened
// or closed has a `NamespaceTransition` in the map, and a use of that namespace waits for it
// while other namespaces go on. An engine is in the open map only once open and leaves it
// before its close starts, so no lease is ever handed out for a closing engine. Open engines
// plus namespaces being opened never exceed `namespacesOpenMax`; an opener closes the
// namespace it evicts before it opens its own, so RocksDB never holds more open.

import EddyModel
import EddyStorage
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

public final class DataDirectory: Sendable {
    /// The namespace used when a request names none.
    public static let defaultNamespace = "default"

    public let path: String
    private let options: EngineOptions
    /// The block cache every namespace opened here shares (nil: each has its own).
    public var blockCache: BlockCache? { self.options.blockCache }
    private let logger: Logger
    private let lockDescriptor: Int32
    /// What is open and held; one lock so no engine opens after close.
    private let state = Mutex(OpenNamespaces())
    /// `observeCommits` observers by token (tokens never reused), and how many (the commit
    /// path's fast check).
    private let commitObservers = Mutex<(observers: [UInt64: @Sendable (String, LogID) -> Void], nextToken: UInt64)>(([:], 1))
    private let commitObserverCount = Atomic<Int>(0)

    /// The open namespaces, their leases and when each was last used.
    private struct OpenNamespaces {
        var engines: [String: Engine] = [:]
        /// Namespaces being opened or closed outside the lock (never also in `engines`).
        var transitions: [String: NamespaceTransition] = [:]
        /// How many of `transitions` are openings (each counts towards `namespacesOpenMax`).
        var openingCount = 0
        /// Leases held per namespace (absent: none).
        var leases: [String: Int] = [:]
        /// A use counter's value at each namespace's latest lease or lookup (least recently
        /// used is the smallest).
        var lastUsed: [String: UInt64] = [:]
        var useClock: UInt64 = 0
        /// Namespaces closed to make room since the directory opened.
        var closedForRoom = 0
        /// The newest log entry of each namespace closed to make room and not opened since
        /// (`newestLogIDIfKnown`; one entry per namespace on disk at most).
        var newestAtClose: [String: LogID?] = [:]
        var closed = false

        mutating func markUsed(_ name: String) {
            self.useClock += 1
            self.lastUsed[name] = self.useClock
        }

        /// A use of `name` and, when `leased`, one more lease of it.
        mutating func use(_ name: String, leased: Bool) {
            self.markUsed(name)
            if leased { self.leases[name, default: 0] += 1 }
        }
    }

    /// Opens the directory and takes its lock. Throws `inUse` when another process holds it.
    public init(path: String, options: EngineOptions, logger: Logger) throws(EddyError) {
        self.path = path
        self.options = options
        self.logger = logger
        do {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw EddyError(.io, "cannot create data directory \(path): \(error.localizedDescription)")
        }
        let lockPath = path + "/eddyd.lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw EddyError(.io, "cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            Glibc.close(fd)
            throw EddyError(
                .inUse,
                "data directory \(path) is in use by another process (is eddyd running?); stop it first")
        }
        self.lockDescriptor = fd
    }

    deinit {
        self.close()
    }

    /// Validates a namespace name: 1 to 63 of `[A-Za-z0-9_-]`, not starting with `-` or `_`.
    public static func validateNamespace(_ name: String) throws(EddyError) {
        let bytes = Array(name.utf8)
        let allowed = bytes.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F
        }
        guard !bytes.isEmpty, bytes.count <= Limits.namespaceBytesMax, allowed, bytes[0] != 0x2D, bytes[0] != 0x5F else {
            throw EddyError(
                .invalidArgument,
                "namespace \"\(name)\" is invalid; use 1 to \(Limits.namespaceBytesMax) letters, digits, '-' or '_', starting with a letter or digit"
            )
        }
    }

    /// Calls `body` with each namespace open now, in name order, holding a lease of that one
    /// only while `body` runs (not counted as a use). One at a time: a pass over every open
    /// namespace (log retention, metrics) never holds them all at once, which refused any
    /// namespace not open meanwhile with `busy` (every open one held).
    public func forEachOpenEngine(_ body: (EngineLease) -> Void) {
        for name in self.openNamespaces {
            let engine = self.state.withLock { state -> Engine? in
                guard !state.closed, let engine = state.engines[name] else { return nil }
                state.leases[name, default: 0] += 1
                return engine
            }
            guard let engine else { continue }
            let lease = EngineLease(namespace: name, engine: engine, directory: self)
            defer { lease.release() }
            body(lease)
        }
    }

    /// The names of the namespaces open now.
    public var openNamespaces: [String] {
        self.state.withLock { $0.engines.keys.sorted() }
    }

    /// How many namespaces are open now and how many were closed to make room since the
    /// directory opened (metrics: a steadily rising count means more namespaces are in use
    /// than stay open, and each reopen pays a write-ahead-log replay).
    public var namespaceFigures: (open: Int, closedForRoom: Int) {
        self.state.withLock { ($0.engines.count, $0.closedForRoom) }
    }

    /// The engine of namespace `name`, opened on first use, held open until the lease is
    /// released. `create: false`: a namespace that is neither open nor on disk is `notFound`
    /// (only the admin creates namespaces once authentication is configured). On a follower,
    /// only replication creates namespaces (`replicaLease`): a client asking for one the leader
    /// has not replicated here yet gets `notFound`.
    public func lease(namespace name: String, create: Bool = true) throws(EddyError) -> EngineLease {
        try self.checkAvailable(name)
        return EngineLease(namespace: name, engine: try self.openEngine(name, create: create, leased: true), directory: self)
    }

    /// A lease of namespace `name` when it is open now; nil otherwise (also for a name that is
    /// not valid). Never opens one: for a caller that must not block.
    public func leaseIfOpen(namespace name: String) -> EngineLease? {
        let engine = self.state.withLock { state -> Engine? in
            guard !state.closed, let engine = state.engines[name] else { return nil }
            state.use(name, leased: true)
            return engine
        }
        return engine.map { EngineLease(namespace: name, engine: $0, directory: self) }
    }

    /// The engine of namespace `name`, opened on first use, without a lease. Only for the
    /// default namespace (never closed to make room while the directory is open) and for a
    /// process that is the directory's only user (the `eddy` tool); a server using any other
    /// namespace takes `lease(namespace:create:)`, as its engine may be closed for room.
    public func engine(namespace name: String, create: Bool = true) throws(EddyError) -> Engine {
        try self.checkAvailable(name)
        return try self.openEngine(name, create: create, leased: false)
    }

    private func checkAvailable(_ name: String) throws(EddyError) {
        try Self.validateNamespace(name)
        if self.options.leader != nil, name != Self.defaultNamespace, !self.isOpenOrOnDisk(name) {
            throw EddyError(
                .notFound,
                "namespace \(name) does not exist on this follower (a namespace created on the leader appears here once replication brings it)")
        }
    }

    /// A follower's replica of the leader's namespace `name`, created empty when missing, held
    /// until the lease is released.
    public func replicaLease(namespace name: String) throws(EddyError) -> EngineLease {
        try Self.validateNamespace(name)
        return EngineLease(namespace: name, engine: try self.openEngine(name, create: true, leased: true), directory: self)
    }

    /// Closes and removes a follower's replica of namespace `name` that holds no entry, so it
    /// can be bootstrapped from a snapshot (a replica created empty, then refused because the
    /// leader pruned the entries it needs). False, and nothing changed, when the replica holds
    /// an entry, is not open or is leased (a reader uses it). Under the open map's lock, so no
    /// client reopens it meanwhile (on a follower, a namespace that is neither open nor on disk
    /// is `notFound`).
    public func discardEmptyReplica(namespace name: String) throws(EddyError) -> Bool {
        try Self.validateNamespace(name)
        return try self.state.withLock { (state: inout OpenNamespaces) throws(EddyError) -> Bool in
            guard !state.closed, state.leases[name] == nil, let engine = state.engines[name], try engine.lastLogID() == nil else {
                return false
            }
            state.engines[name] = nil
            state.lastUsed[name] = nil
            engine.close()
            do {
                try FileManager.default.removeItem(atPath: self.path + "/" + name)
            } catch {
                throw EddyError(.io, "removing the empty replica of namespace \(name) to bootstrap it: \(error.localizedDescription)")
            }
            self.logger.info("discarded an empty replica to bootstrap it from a snapshot", metadata: ["eddy.ns": "\(name)"])
            return true
        }
    }

    /// Ends one lease of `name` (`EngineLease.release`).
    func releaseLease(_ name: String) {
        self.state.withLock { state in
            guard let count = state.leases[name] else { return }
            state.leases[name] = count > 1 ? count - 1 : nil
        }
    }

    private func isOpenOrOnDisk(_ name: String) -> Bool {
        self.state.withLock { $0.engines[name] != nil || $0.transitions[name]?.kind == .opening } || FileManager.default.fileExists(atPath: self.path + "/" + name + "/CURRENT")
    }

    /// What `openEngine` found under the lock.
    private enum OpenStep {
        case open(Engine)
        /// Opening or closing elsewhere: wait for it, then look again.
        case wait(NamespaceTransition)
        /// This caller opens it, after closing `evicted` (when room was needed).
        case openHere(NamespaceTransition, evicted: (name: String, engine: Engine, transition: NamespaceTransition)?)
    }

    private func openEngine(_ name: String, create: Bool, leased: Bool) throws(EddyError) -> Engine {
        while true {
            let step = try self.state.withLock { (state: inout OpenNamespaces) throws(EddyError) -> OpenStep in
                if state.closed {
                    throw EddyError(.shuttingDown, "the data directory \(self.path) is closed; the server is shutting down")
                }
                if let open = state.engines[name] {
                    state.use(name, leased: leased)
                    return .open(open)
                }
                if let transition = state.transitions[name] { return .wait(transition) }
                if !create, name != Self.defaultNamespace, !FileManager.default.fileExists(atPath: self.path + "/" + name + "/CURRENT") {
                    throw EddyError(.notFound, "namespace \(name) does not exist; only the admin creates namespaces")
                }
                var evicted: (name: String, engine: Engine, transition: NamespaceTransition)?
                if state.engines.count + state.openingCount >= Limits.namespacesOpenMax {
                    evicted = try self.evictLeastRecentlyUsed(&state, toOpen: name)
                }
                let opening = NamespaceTransition(.opening)
                state.transitions[name] = opening
                state.openingCount += 1
                return .openHere(opening, evicted: evicted)
            }
            switch step {
            case .open(let engine):
                return engine
            case .wait(let transition):
                transition.wait()
            case .openHere(let opening, let evicted):
                if let evicted { self.finishClosing(evicted.name, evicted.engine, evicted.transition, toOpen: name) }
                return try self.finishOpening(name, opening, leased: leased)
            }
        }
    }

    /// Opens namespace `name`'s engine outside the lock and puts it in the open map (or, when the
    /// directory closed meanwhile, closes it again and throws `shuttingDown`).
    private func finishOpening(_ name: String, _ opening: NamespaceTransition, leased: Bool) throws(EddyError) -> Engine {
        defer { opening.finish() }
        var logger = self.logger
        logger[metadataKey: "eddy.ns"] = "\(name)"
        var options = self.options
        options.namespace = name
        let engine: Engine
        do {
            engine = try Engine.open(directory: self.path + "/" + name, options: options, logger: logger)
        } catch {
            self.state.withLock { state in
                state.transitions[name] = nil
                state.openingCount -= 1
            }
            throw error
        }
        engine.observeCommits { [weak self] entries in
            guard let self, self.commitObserverCount.load(ordering: .sequentiallyConsistent) > 0, let newest = entries.last?.id else { return }
            for observer in self.commitObservers.withLock({ Array($0.observers.values) }) { observer(name, newest) }
        }
        let published = self.state.withLock { state -> Bool in
            state.transitions[name] = nil
            state.openingCount -= 1
            guard !state.closed else { return false }
            state.engines[name] = engine
            state.newestAtClose[name] = nil
            state.use(name, leased: leased)
            return true
        }
        guard published else {
            engine.close()
            throw EddyError(.shuttingDown, "the data directory \(self.path) is closed; the server is shutting down")
        }
        return engine
    }

    /// Takes the least recently used namespace nobody holds out of the open map, to make room
    /// for `name` (the caller closes it, outside the lock); throws `busy` when every open
    /// namespace is held.
    private func evictLeastRecentlyUsed(
        _ state: inout OpenNamespaces, toOpen name: String
    ) throws(EddyError) -> (name: String, engine: Engine, transition: NamespaceTransition) {
        let idle = state.engines.filter { candidate, engine in
            candidate != Self.defaultNamespace && state.leases[candidate] == nil
                && !engine.indexStatus().contains { $0.state == .building }
        }
        guard let victim = idle.keys.min(by: { state.lastUsed[$0, default: 0] < state.lastUsed[$1, default: 0] }) else {
            throw EddyError(
                .busy,
                "cannot open namespace \(name): \(state.engines.count + state.openingCount) namespaces are open and each is in use (by a connection, an event stream, a follower or an index build); namespacesOpenMax is \(Limits.namespacesOpenMax). Retry once one is no longer used"
            )
        }
        let engine = state.engines.removeValue(forKey: victim)!
        let closing = NamespaceTransition(.closing)
        state.transitions[victim] = closing
        state.lastUsed[victim] = nil
        state.closedForRoom += 1
        return (victim, engine, closing)
    }

    /// Closes an evicted namespace's engine outside the lock and records its newest entry.
    private func finishClosing(_ name: String, _ engine: Engine, _ closing: NamespaceTransition, toOpen opening: String) {
        engine.close()
        self.logger.info(
            "closed an idle namespace to open another (namespacesOpenMax)",
            metadata: ["eddy.ns": "\(name)", "eddy.opening": "\(opening)", "eddy.namespaces_open_max": "\(Limits.namespacesOpenMax)"])
        let newest = try? engine.lastLogID()
        self.state.withLock { state in
            state.transitions[name] = nil
            state.newestAtClose[name] = .some(newest)
        }
        closing.finish()
    }

    /// The newest durable log entry of namespace `name` when known without opening it: it is
    /// open, or it was closed to make room since this directory opened (and nothing writes a
    /// closed namespace). `.some(nil)`: known to have none; nil: not known (not opened since
    /// the directory opened; open it to read it).
    public func newestLogIDIfKnown(namespace name: String) -> LogID?? {
        self.state.withLock { state -> LogID?? in
            if let engine = state.engines[name] { return .some(try? engine.lastLogID()) }
            return state.newestAtClose[name]
        }
    }

    /// Calls `observer` with a namespace and its newest entry after each durable commit group of
    /// any namespace, open now or opened later (on that engine's committer or syncer thread; it
    /// must not block), until `stopObservingCommits` with the token returned. For the leader's
    /// log server: a follower that parked an idle namespace (closed its connection to it) is
    /// told when the namespace is written again.
    public func observeCommits(_ observer: @escaping @Sendable (_ namespace: String, _ newest: LogID) -> Void) -> UInt64 {
        self.commitObservers.withLock { table in
            let token = table.nextToken
            table.nextToken += 1
            table.observers[token] = observer
            self.commitObserverCount.store(table.observers.count, ordering: .sequentiallyConsistent)
            return token
        }
    }

    /// Ends `observeCommits`'s calls for `token` (a token already ended: nothing).
    public func stopObservingCommits(_ token: UInt64) {
        self.commitObservers.withLock { table in
            table.observers[token] = nil
            self.commitObserverCount.store(table.observers.count, ordering: .sequentiallyConsistent)
        }
    }

    /// Namespaces present on disk.
    public func namespacesOnDisk() -> [String] { Self.listing(self.path) }

    /// The namespaces in the data directory at `path`, without opening (or locking) it.
    public static func listing(_ path: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.filter { name in
            (try? Self.validateNamespace(name)) != nil
                && FileManager.default.fileExists(atPath: path + "/" + name + "/CURRENT")
        }.sorted()
    }

    /// Drains and closes every engine, waits for namespaces being opened or closed (an opening
    /// one closes again), then releases the lock. Idempotent.
    public func close() {
        let (open, transitions, wasClosed) = self.state.withLock { state in
            defer {
                state.engines = [:]
                state.closed = true
            }
            return (Array(state.engines.values), Array(state.transitions.values), state.closed)
        }
        for engine in open { engine.close() }
        for transition in transitions { transition.wait() }
        if !wasClosed {
            flock(self.lockDescriptor, LOCK_UN)
            Glibc.close(self.lockDescriptor)
        }
    }
}
