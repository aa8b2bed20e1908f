// A folder of backups (`eddy backup --to DIR`): one subfolder per backup, named
// `<UTC yyyyMMdd-HHmmss>-<checkpoint id>`, holding `backup.json` (the manifest) and one folder
// per namespace with its RocksDB files. A backup is written under `.partial-<name>` and renamed
// when complete, so a listed backup is always whole; an interrupted one is never listed (and is
// removed by the next backup).
//
// Incremental: RocksDB's SST files are immutable and numbered once per database, so an SST of
// the same name and size in the newest earlier backup of the same database (same id) is the same
// file: it is hard-linked, not copied. Every other file is copied and fsynced.

import EddyModel
import Foundation

struct BackupManifest {
    static let format = 1
    static let fileName = "backup.json"

    struct Namespace {
        var databaseID: String
        var last: String?
        /// File name -> bytes.
        var files: [String: Int]
    }

    var createdAt: String
    var namespaces: [String: Namespace]

    var json: Value {
        var namespaces: [String: Value] = [:]
        for (name, ns) in self.namespaces {
            namespaces[name] = .object([
                "databaseId": .string(ns.databaseID), "last": ns.last.map { .string($0) } ?? .null,
                "files": .object(ns.files.mapValues { .number(Double($0)) }),
            ])
        }
        return .object(["format": .number(Double(Self.format)), "createdAt": .string(self.createdAt), "namespaces": .object(namespaces)])
    }

    init(createdAt: String, namespaces: [String: Namespace]) {
        self.createdAt = createdAt
        self.namespaces = namespaces
    }

    init(contentsOf path: String) throws(EddyError) {
        guard let data = FileManager.default.contents(atPath: path) else { throw EddyError(.notFound, "\(path) is missing: not a complete backup") }
        let value: Value
        do {
            value = try JSONParser.parse(Array(data))
        } catch {
            throw EddyError(.corruption, "\(path) is not valid JSON: \(error.message)")
        }
        guard value["format"] == .number(Double(Self.format)), case .string(let created) = value["createdAt"],
            case .object(let namespaces) = value["namespaces"]
        else { throw EddyError(.corruption, "\(path) is not a backup manifest of format \(Self.format)") }
        var parsed: [String: Namespace] = [:]
        for (name, ns) in namespaces {
            guard case .string(let id) = ns["databaseId"], case .object(let files) = ns["files"] else {
                throw EddyError(.corruption, "\(path): namespace \(name) lacks databaseId or files")
            }
            var sizes: [String: Int] = [:]
            for (file, size) in files {
                guard case .number(let n) = size else { throw EddyError(.corruption, "\(path): size of \(name)/\(file) is not a number") }
                sizes[file] = Int(n)
            }
            let last: String?
            if case .string(let l) = ns["last"] { last = l } else { last = nil }
            parsed[name] = Namespace(databaseID: id, last: last, files: sizes)
        }
        self.init(createdAt: created, namespaces: parsed)
    }

    var totalBytes: Int { self.namespaces.values.reduce(0) { $0 + $1.files.values.reduce(0, +) } }
}

struct BackupStore {
    let root: String

    /// Complete backups, oldest first.
    func backups() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: self.root)) ?? []
        return names.filter { !$0.hasPrefix(".") && FileManager.default.fileExists(atPath: self.root + "/" + $0 + "/" + BackupManifest.fileName) }
            .sorted()
    }

    /// The manifest of backup `name`, which must be one of `backups()`: a name is a folder of
    /// the backup folder, never a path (`--name ../x` read a manifest outside it, and a
    /// verification made its scratch copy there).
    func manifest(_ name: String) throws(EddyError) -> BackupManifest {
        guard !name.isEmpty, !name.contains("/"), !name.hasPrefix("."), self.backups().contains(name) else {
            throw EddyError(.notFound, "no backup named \(name.debugDescription) in \(self.root) (eddy backup --to \(self.root) --list lists them)")
        }
        return try BackupManifest(contentsOf: self.root + "/" + name + "/" + BackupManifest.fileName)
    }

    /// Leftovers of interrupted backups and verifications.
    func removeLeftovers() {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: self.root)) ?? [] where name.hasPrefix(".partial-") || name.hasPrefix(".verify-") {
            try? FileManager.default.removeItem(atPath: self.root + "/" + name)
        }
    }
}

/// File copies for backups and restores: whole files, fsynced, with their directory.
enum FileCopy {
    static func copy(_ source: String, to destination: String) throws(EddyError) {
        do {
            try FileManager.default.copyItem(atPath: source, toPath: destination)
        } catch {
            throw EddyError(.io, "cannot copy \(source) to \(destination): \(error.localizedDescription)")
        }
        try self.fsync(destination)
    }

    static func link(_ source: String, to destination: String) throws(EddyError) {
        do {
            try FileManager.default.linkItem(atPath: source, toPath: destination)
        } catch {
            throw EddyError(.io, "cannot link \(source) to \(destination): \(error.localizedDescription)")
        }
    }

    static func fsync(_ path: String, directory: Bool = false) throws(EddyError) {
        let fd = open(path, directory ? O_RDONLY | O_DIRECTORY : O_RDONLY)
        guard fd >= 0 else { throw EddyError(.io, "cannot open \(path) to sync it: errno \(errno)") }
        defer { close(fd) }
        guard Glibc.fsync(fd) == 0 else { throw EddyError(.io, "fsync of \(path) failed: errno \(errno)") }
    }

    static func makeDirectory(_ path: String) throws(EddyError) {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw EddyError(.io, "cannot create \(path): \(error.localizedDescription)")
        }
    }

    static func size(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? -1
    }

    static func files(in directory: String) throws(EddyError) -> [String] {
        do {
            return try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        } catch {
            throw EddyError(.io, "cannot list \(directory): \(error.localizedDescription)")
        }
    }
}
