// `eddy backup` (online, against a running daemon: a checkpoint it makes, copied into a backup
// folder, incremental by hard links), `eddy backup --list` / `--verify`, and `eddy restore`
// (onto a stopped, empty data directory). See BackupStore.swift for the folder's layout.
//
// The daemon is reached on its native socket (`<data>/eddyd.sock`, file mode 0660); with
// credentials configured, `--admin-token-file` sends the admin secret first. The daemon's
// checkpoint is released whether the copy succeeds or not.

import ArgumentParser
import EddyEngine
import EddyModel
import EddyProtocol
import Foundation

struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Back up a running daemon's every namespace into a backup folder, or list or verify the backups there.",
        discussion: """
            Without --list or --verify: asks the daemon at --socket for a consistent checkpoint (writes go \
            on meanwhile), copies it into a new subfolder of --to (SST files unchanged since the \
            previous backup are hard-linked, not copied), and prints what it holds (the last log id \
            per namespace). A restored backup keeps its database id and log position, so followers \
            and resumable subscribers continue.
            Exit status: 0 done, 3 --verify found a problem, 1 other errors.
            """)

    @Option(name: .long, help: "The backup folder (created if needed).") var to: String
    @Option(name: .long, help: "Data directory of the running daemon (to find its socket). Default: ./data") var data = "./data"
    @Option(name: .long, help: "The daemon's native socket. Default: <data>/eddyd.sock") var socket: String?
    @Option(name: .customLong("admin-token-file"), help: "File holding the daemon's admin secret (when credentials are configured).") var adminTokenFile: String?
    @Flag(name: .long, help: "List the backups in --to.") var list = false
    @Flag(name: .long, help: "Check a backup: every file present with its size, every namespace opens and verifies clean.") var verify = false
    @Option(name: .long, help: "The backup to --verify. Default: the newest.") var name: String?

    func run() async throws {
        do {
            let store = BackupStore(root: self.to)
            if self.list {
                try self.printList(store)
            } else if self.verify {
                guard let name = self.name ?? store.backups().last else { throw EddyError(.notFound, "no complete backup in \(self.to)") }
                if !(try BackupVerifier.verify(store, name)) { throw ExitCode(3) }
            } else {
                try self.takeBackup(store)
            }
        } catch let error as EddyError {
            FileHandle.standardError.write(Data("eddy: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }

    private func printList(_ store: BackupStore) throws(EddyError) {
        for name in store.backups() {
            let manifest = try store.manifest(name)
            let namespaces = manifest.namespaces.keys.sorted().map { "\($0) (last \(manifest.namespaces[$0]!.last ?? "none"))" }
            printLine("\(name)  \(manifest.createdAt)  \(Self.mebibytes(manifest.totalBytes)) MiB  \(namespaces.joined(separator: ", "))")
        }
    }

    static func mebibytes(_ bytes: Int) -> String { String(format: "%.1f", Double(bytes) / 1_048_576) }

    private func takeBackup(_ store: BackupStore) throws(EddyError) {
        let started = Date()
        try FileCopy.makeDirectory(self.to)
        store.removeLeftovers()
        let socketPath = self.socket ?? self.data + "/eddyd.sock"
        guard let daemon = try DaemonConnection.connect(socketPath: socketPath, adminTokenFile: self.adminTokenFile) else {
            throw EddyError(
                .unavailable,
                "no daemon answers on \(socketPath); `eddy backup` copies a running daemon's data: start eddyd, or pass --socket (a stopped daemon's data directory can be copied as it is)")
        }
        let checkpoint = try daemon.request(.checkpoint, [:])["value"]
        guard case .string(let id) = checkpoint["id"], case .object(let namespaces) = checkpoint["namespaces"] else {
            throw EddyError(.internal, "the daemon's checkpoint answer lacks id or namespaces: \(JSONWriter.string(checkpoint))")
        }
        defer { _ = try? daemon.request(.releaseCheckpoint, ["id": .string(id)]) }

        let formatter = DateFormatter()
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        formatter.timeZone = TimeZone(identifier: "UTC")
        let name = formatter.string(from: started) + "-" + id
        let partial = self.to + "/.partial-" + name
        let previous = store.backups().last
        let previousManifest = try previous.map { name throws(EddyError) in try store.manifest(name) }
        var manifest = BackupManifest(createdAt: ISO8601DateFormatter().string(from: started), namespaces: [:])
        var copiedBytes = 0
        var linkedBytes = 0
        for nsName in namespaces.keys.sorted() {
            guard case .string(let source) = namespaces[nsName]!["directory"], case .string(let databaseID) = namespaces[nsName]!["databaseId"]
            else { throw EddyError(.internal, "the daemon's checkpoint answer for \(nsName) lacks directory or databaseId") }
            let last: String?
            if case .string(let l) = namespaces[nsName]!["last"] { last = l } else { last = nil }
            let target = partial + "/" + nsName
            try FileCopy.makeDirectory(target)
            let earlier = previousManifest?.namespaces[nsName].flatMap { $0.databaseID == databaseID ? $0 : nil }
            var files: [String: Int] = [:]
            var nsCopied = 0
            var nsLinked = 0
            for file in try FileCopy.files(in: source) {
                let size = FileCopy.size(source + "/" + file)
                if file.hasSuffix(".sst"), let previous, let earlier, earlier.files[file] == size {
                    try FileCopy.link(self.to + "/" + previous + "/" + nsName + "/" + file, to: target + "/" + file)
                    nsLinked += size
                } else {
                    try FileCopy.copy(source + "/" + file, to: target + "/" + file)
                    nsCopied += size
                }
                files[file] = size
            }
            try FileCopy.fsync(target, directory: true)
            manifest.namespaces[nsName] = BackupManifest.Namespace(databaseID: databaseID, last: last, files: files)
            copiedBytes += nsCopied
            linkedBytes += nsLinked
            printLine(
                "namespace \(nsName): \(files.count) files, \(Self.mebibytes(nsCopied)) MiB copied, \(Self.mebibytes(nsLinked)) MiB linked from \(previous ?? "-"), last log id \(last ?? "none")"
            )
        }
        let manifestPath = partial + "/" + BackupManifest.fileName
        guard FileManager.default.createFile(atPath: manifestPath, contents: Data(JSONWriter.bytes(manifest.json, pretty: true))) else {
            throw EddyError(.io, "cannot write \(manifestPath)")
        }
        try FileCopy.fsync(manifestPath)
        try FileCopy.fsync(partial, directory: true)
        do {
            try FileManager.default.moveItem(atPath: partial, toPath: self.to + "/" + name)
        } catch {
            throw EddyError(.io, "cannot rename \(partial) to \(name): \(error.localizedDescription)")
        }
        try FileCopy.fsync(self.to, directory: true)
        let seconds = Date().timeIntervalSince(started)
        printLine(
            "backup \(self.to)/\(name): \(manifest.namespaces.count) namespaces, \(Self.mebibytes(copiedBytes + linkedBytes)) MiB (\(Self.mebibytes(copiedBytes)) copied, \(Self.mebibytes(linkedBytes)) linked) in \(String(format: "%.2f", seconds)) s"
        )
    }
}

/// `--verify`, and the check `eddy restore` runs: materialize a backup's namespaces in a scratch
/// folder next to it (SSTs hard-linked, the rest copied: opening a database writes to its
/// MANIFEST and LOG, never to SSTs), open each, run `verify`, and compare its last log id with
/// the manifest's.
enum BackupVerifier {
    static func verify(_ store: BackupStore, _ name: String) throws(EddyError) -> Bool {
        let manifest = try store.manifest(name)
        let scratch = store.root + "/.verify-" + name
        try? FileManager.default.removeItem(atPath: scratch)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var healthy = true
        for nsName in manifest.namespaces.keys.sorted() {
            let ns = manifest.namespaces[nsName]!
            let source = store.root + "/" + name + "/" + nsName
            let target = scratch + "/" + nsName
            try FileCopy.makeDirectory(target)
            var missing: [String] = []
            for (file, size) in ns.files.sorted(by: { $0.key < $1.key }) {
                let path = source + "/" + file
                guard FileCopy.size(path) == size else {
                    missing.append("\(file) (\(FileCopy.size(path) < 0 ? "missing" : "\(FileCopy.size(path)) bytes, expected \(size)"))")
                    continue
                }
                if file.hasSuffix(".sst") { try FileCopy.link(path, to: target + "/" + file) } else { try FileCopy.copy(path, to: target + "/" + file) }
            }
            if !missing.isEmpty {
                printLine("namespace \(nsName): PROBLEM: files do not match the manifest: \(missing.joined(separator: ", "))")
                healthy = false
                continue
            }
            let (report, last) = try self.check(target)
            let lastMatches = last?.rawValue == ns.last
            printLine(
                "namespace \(nsName): \(report)\(lastMatches ? "" : "; PROBLEM: last log id \(last?.rawValue ?? "none") but the manifest says \(ns.last ?? "none")")"
            )
            healthy = healthy && report.isHealthy && lastMatches
        }
        printLine("backup \(name): \(healthy ? "verified" : "PROBLEMS FOUND")")
        return healthy
    }

    /// Opens the database in `directory` and verifies it.
    static func check(_ directory: String) throws(EddyError) -> (VerifyReport, LogID?) {
        var options = EngineOptions(durability: .sync)
        options.runIndexBuilds = false
        let engine = try Engine.open(directory: directory, options: options)
        defer { engine.close() }
        return (try engine.verify(), try engine.lastLogID())
    }
}

struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a backup onto a stopped daemon's empty data directory, and verify it.",
        discussion: """
            --from is one backup (a subfolder of an `eddy backup --to` folder) or the folder itself \
            (then its newest backup). Every namespace of the backup is copied into --data, which \
            must hold none of them (move an old data directory aside first), then opened and \
            verified. The restored database keeps its id and log position.
            Exit status: 0 restored and verified, 3 restored but verify found a problem, 1 other errors.
            """)

    @Option(name: .long, help: "A backup, or a backup folder (its newest backup).") var from: String
    @Option(name: .long, help: "The data directory to restore into (empty, daemon stopped).") var data: String
    @Option(name: .long, parsing: .unconditional, help: "Point in time: also replay log entries after the backup up to this log id (needs --log-from).") var until: String?
    @Option(name: .customLong("log-from"), help: "A data directory whose log holds the entries after the backup (the leader's, running or stopped, or a follower's).") var logFrom: String?

    func validate() throws {
        if self.until != nil, self.logFrom == nil { throw ValidationError("--until needs --log-from DATA_DIR: the log to replay") }
        if self.until == nil, self.logFrom != nil { throw ValidationError("--log-from needs --until LOG_ID: where to stop") }
        if let until, LogID(until) == nil { throw ValidationError("--until \(until) is not a log id (a push id such as -P7I_VEkumy48Ss99VW-)") }
    }

    func run() async throws {
        do {
            if !(try await self.restore()) { throw ExitCode(3) }
        } catch let error as EddyError {
            FileHandle.standardError.write(Data("eddy: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }

    private func restore() async throws(EddyError) -> Bool {
        let started = Date()
        var root = (self.from as NSString).deletingLastPathComponent
        var name = (self.from as NSString).lastPathComponent
        if !FileManager.default.fileExists(atPath: self.from + "/" + BackupManifest.fileName) {
            guard let newest = BackupStore(root: self.from).backups().last else {
                throw EddyError(.notFound, "\(self.from) is neither a backup (no \(BackupManifest.fileName)) nor a folder of backups")
            }
            root = self.from
            name = newest
        }
        let store = BackupStore(root: root.isEmpty ? "." : root)
        let manifest = try store.manifest(name)
        try FileCopy.makeDirectory(self.data)
        for nsName in manifest.namespaces.keys where FileManager.default.fileExists(atPath: self.data + "/" + nsName) {
            throw EddyError(
                .invalidArgument,
                "\(self.data)/\(nsName) already exists; restore into an empty data directory (stop the daemon and move the old one aside)")
        }
        // A point-in-time restore that cannot be done is refused before anything is copied.
        if let until = self.until.flatMap(LogID.init), let logFrom = self.logFrom {
            for nsName in manifest.namespaces.keys.sorted() {
                try Self.openReplaySource(nsName, manifest.namespaces[nsName]!, until: until, from: logFrom)?.close()
            }
        }
        // What this run put in place goes again if a later step fails: a refused restore leaves
        // the data directory as it found it (a retry is not refused as "already exists").
        var placed: [String] = []
        do {
            return try await self.restore(manifest, store: store, name: name, started: started, placed: &placed)
        } catch {
            for path in placed { try? FileManager.default.removeItem(atPath: path) }
            for nsName in manifest.namespaces.keys { try? FileManager.default.removeItem(atPath: self.data + "/.restoring-" + nsName) }
            throw error
        }
    }

    private func restore(
        _ manifest: BackupManifest, store: BackupStore, name: String, started: Date, placed: inout [String]
    ) async throws(EddyError) -> Bool {
        var bytes = 0
        var healthy = true
        for nsName in manifest.namespaces.keys.sorted() {
            let ns = manifest.namespaces[nsName]!
            let staging = self.data + "/.restoring-" + nsName
            try? FileManager.default.removeItem(atPath: staging)
            try FileCopy.makeDirectory(staging)
            for (file, size) in ns.files.sorted(by: { $0.key < $1.key }) {
                let source = store.root + "/" + name + "/" + nsName + "/" + file
                guard FileCopy.size(source) == size else {
                    throw EddyError(.corruption, "\(source) is \(FileCopy.size(source)) bytes, the manifest says \(size): the backup is damaged")
                }
                try FileCopy.copy(source, to: staging + "/" + file)
                bytes += size
            }
            try FileCopy.fsync(staging, directory: true)
            do {
                try FileManager.default.moveItem(atPath: staging, toPath: self.data + "/" + nsName)
            } catch {
                throw EddyError(.io, "cannot move \(staging) into place: \(error.localizedDescription)")
            }
            placed.append(self.data + "/" + nsName)
            if let until = self.until.flatMap(LogID.init), let logFrom = self.logFrom {
                try await Self.replay(nsName, ns, into: self.data + "/" + nsName, until: until, from: logFrom)
            }
            let (report, last) = try BackupVerifier.check(self.data + "/" + nsName)
            healthy = healthy && report.isHealthy && (self.until != nil || last?.rawValue == ns.last)
            printLine("namespace \(nsName): restored, last log id \(last?.rawValue ?? "none"), \(report)")
        }
        try FileCopy.fsync(self.data, directory: true)
        printLine(
            "restored \(store.root)/\(name) into \(self.data): \(manifest.namespaces.count) namespaces, \(BackupCommand.mebibytes(bytes)) MiB in \(String(format: "%.2f", Date().timeIntervalSince(started))) s"
        )
        return healthy
    }

    /// Point-in-time restore: applies the entries of `from`'s log after the backup's last entry
    /// and up to `until` to the restored namespace, as a follower applies its leader's (same ids
    /// and timestamps; before-images checked, so a log of another history is refused).
    static func replay(_ name: String, _ ns: BackupManifest.Namespace, into directory: String, until: LogID, from dataDirectory: String) async throws(EddyError) {
        guard let log = try Self.openReplaySource(name, ns, until: until, from: dataDirectory) else {
            printLine("namespace \(name): no log in \(dataDirectory); restored as of the backup")
            return
        }
        defer { log.close() }
        var options = EngineOptions(durability: .sync)
        options.runIndexBuilds = false
        let engine = try Engine.open(directory: directory, options: options)
        defer { engine.close() }
        var cursor = ns.last.flatMap(LogID.init)
        var count = 0
        while true {
            let entries = try log.entries(after: cursor, through: until, limit: 1024)
            guard let last = entries.last else { break }
            try await engine.applyReplicated(entries)
            count += entries.count
            cursor = last.id
        }
        printLine("namespace \(name): replayed \(count) log entries after the backup, up to \(cursor?.rawValue ?? "none") (--until \(until))")
    }

    /// The log a point-in-time restore of namespace `name` replays, checked: nil when
    /// `dataDirectory` holds no such namespace (restored as of the backup); refused when the
    /// backup is already past `until`, the log is another database's, or it was pruned past the
    /// backup's last entry.
    static func openReplaySource(_ name: String, _ ns: BackupManifest.Namespace, until: LogID, from dataDirectory: String) throws(EddyError)
        -> ReadOnlyLog?
    {
        let source = dataDirectory + "/" + name
        guard FileManager.default.fileExists(atPath: source + "/CURRENT") else { return nil }
        let backupLast = ns.last.flatMap(LogID.init)
        if let backupLast, until < backupLast {
            throw EddyError(.invalidArgument, "namespace \(name): the backup already holds entries up to \(backupLast), after --until \(until); restore an older backup")
        }
        let log = try ReadOnlyLog(directory: source)
        guard log.belongs(to: ns.databaseID) else {
            log.close()
            throw EddyError(.invalidArgument, "namespace \(name): \(source) is the log of database \(log.databaseID), not of the backup's \(ns.databaseID)")
        }
        if let pruned = log.prunedThrough, backupLast.map({ $0 < pruned }) ?? true {
            log.close()
            throw EddyError(
                .invalidArgument,
                "namespace \(name): the log in \(source) was pruned through \(pruned), past the backup's last entry \(backupLast?.rawValue ?? "none"): the entries in between are gone (take a newer backup, or keep more log with --log-retain-*)")
        }
        return log
    }
}
