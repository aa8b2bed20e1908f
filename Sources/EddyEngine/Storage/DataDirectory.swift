// Folder Storage/: where databases live on disk: the data directory and its lock, namespaces,
// checkpoints for backups.
//
// The data directory of a daemon: one subdirectory per namespace (`?ns=`), each its own
// RocksDB database, plus `eddyd.lock`, an advisory lock (flock) held while a daemon or an
// offline `eddy` command uses the directory, so the two refuse each other clearly.
//
// Namespaces are opened on first use and stay open; at most `Limits.namespacesOpenMax`.
// Thread-safety: the open map is guarded by a Mutex.

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
    /// Open engines and whether `close()` began; one lock so no engine opens after close.
    private let state = Mutex<(engines: [String: Engine], closed: Bool)>(([:], false))

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

    /// The namespaces opened so far, with their engines.
    public var openEngines: [(namespace: String, engine: Engine)] {
        self.state.withLock { state in state.engines.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }
    }

    /// The engine of namespace `name`, opened on first use.
    /// `create: false`: a namespace that is neither open nor on disk is `notFound` (only the
    /// admin creates namespaces once authentication is configured). On a follower, only
    /// replication creates namespaces (`replicaEngine`): a client asking for one the leader has
    /// not replicated here yet gets `notFound`.
    public func engine(namespace name: String, create: Bool = true) throws(EddyError) -> Engine {
        try Self.validateNamespace(name)
        if self.options.leader != nil, name != Self.defaultNamespace, !self.isOpenOrOnDisk(name) {
            throw EddyError(
                .notFound,
                "namespace \(name) does not exist on this follower (a namespace created on the leader appears here once replication brings it)")
        }
        return try self.openEngine(name, create: create)
    }

    /// The engine of namespace `name` when it is open already; nil otherwise (also for a name
    /// that is not valid). Never opens one, so it costs no more than a lookup: for a caller
    /// that must not block, which takes `engine(namespace:create:)`'s path when this is nil.
    public func openedEngine(namespace name: String) -> Engine? {
        self.state.withLock { $0.closed ? nil : $0.engines[name] }
    }

    /// A follower's replica of the leader's namespace `name`, created empty when missing.
    public func replicaEngine(namespace name: String) throws(EddyError) -> Engine {
        try Self.validateNamespace(name)
        return try self.openEngine(name, create: true)
    }

    /// Closes and removes a follower's replica of namespace `name` that holds no entry, so it
    /// can be bootstrapped from a snapshot (a replica created empty, then refused because the
    /// leader pruned the entries it needs). False, and nothing changed, when the replica holds
    /// an entry or is not open. Under the open map's lock, so no client reopens it meanwhile
    /// (on a follower, a namespace that is neither open nor on disk is `notFound`).
    public func discardEmptyReplica(namespace name: String) throws(EddyError) -> Bool {
        try Self.validateNamespace(name)
        return try self.state.withLock { (state: inout (engines: [String: Engine], closed: Bool)) throws(EddyError) -> Bool in
            guard !state.closed, let engine = state.engines[name], try engine.lastLogID() == nil else { return false }
            state.engines[name] = nil
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

    private func isOpenOrOnDisk(_ name: String) -> Bool {
        self.state.withLock { $0.engines[name] != nil } || FileManager.default.fileExists(atPath: self.path + "/" + name + "/CURRENT")
    }

    private func openEngine(_ name: String, create: Bool) throws(EddyError) -> Engine {
        try self.state.withLock { (state: inout (engines: [String: Engine], closed: Bool)) throws(EddyError) -> Engine in
            if state.closed {
                throw EddyError(.shuttingDown, "the data directory \(self.path) is closed; the server is shutting down")
            }
            if let engine = state.engines[name] { return engine }
            if !create, name != Self.defaultNamespace, !FileManager.default.fileExists(atPath: self.path + "/" + name + "/CURRENT") {
                throw EddyError(.notFound, "namespace \(name) does not exist; only the admin creates namespaces")
            }
            guard state.engines.count < Limits.namespacesOpenMax else {
                throw EddyError(
                    .limitExceeded, "cannot open namespace \(name): namespacesOpenMax (\(Limits.namespacesOpenMax)) are open")
            }
            var logger = self.logger
            logger[metadataKey: "eddy.ns"] = "\(name)"
            var options = self.options
            options.namespace = name
            let engine = try Engine.open(directory: self.path + "/" + name, options: options, logger: logger)
            state.engines[name] = engine
            return engine
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

    /// Drains and closes every engine, then releases the lock. Idempotent.
    public func close() {
        let (open, wasClosed) = self.state.withLock { state in
            defer {
                state.engines = [:]
                state.closed = true
            }
            return (Array(state.engines.values), state.closed)
        }
        for engine in open { engine.close() }
        if !wasClosed {
            flock(self.lockDescriptor, LOCK_UN)
            Glibc.close(self.lockDescriptor)
        }
    }
}
