// `eddy export [PATH] [--out FILE]`: the JSON of a location (default: everything) streamed to
// standard output or a file in bounded memory (`TreeExport`), from a running daemon's data
// directory or a stopped one alike: it reads a read-only RocksDB instance, so the export is the
// database as of the moment it started, whatever is written meanwhile. `--out` writes FILE.partial
// and renames it when complete, so a FILE that exists is whole (see `ExportDestination` for
// links, devices and pipes).
// `--url http://HOST:PORT` exports through the daemon's REST API instead (a GET that the daemon
// streams from one snapshot), for a daemon on another machine; arrays then come out as
// Firebase's REST answers render them, which imports back to the same data.

import ArgumentParser
import EddyEngine
import EddyModel
import Foundation

struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Stream the JSON of a location (default: the whole database) to stdout or a file, in bounded memory.")

    @Option(name: .long, help: "Data directory (of a running daemon or a stopped one). Default: ./data") var data = "./data"
    @Option(name: .long, help: "Namespace. Default: default") var ns = DataDirectory.defaultNamespace
    @Argument(help: "Location to export, e.g. /users. Default: /") var path = "/"
    @Option(name: .long, help: "Write to this file (FILE.partial, renamed when complete) instead of standard output.") var out: String?
    @Option(name: .long, help: "Export through a running daemon's HTTP address (e.g. http://127.0.0.1:9000) instead of reading --data.")
    var url: String?
    @Option(name: .customLong("admin-token-file"), help: "With --url: file holding the daemon's admin secret.") var adminTokenFile: String?

    func run() async throws {
        do {
            try self.export()
        } catch let error as EddyError {
            FileHandle.standardError.write(Data("eddy: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }

    private func export() throws {
        try DataDirectory.validateNamespace(self.ns)
        let location = try Path(self.path)
        let directory = self.data + "/" + self.ns
        let http = try self.url.map { url throws(EddyError) in try DaemonHTTPConnection(url: url, adminTokenFile: self.adminTokenFile) }
        guard http != nil || FileManager.default.fileExists(atPath: directory + "/CURRENT") else {
            throw EddyError(.notFound, "namespace \(self.ns) does not exist in \(self.data)")
        }
        let started = Date()
        var written = 0
        var lastReport = Date()
        let target: FileHandle
        let destination = try self.out.map { out throws(EddyError) in try ExportDestination(out) }
        let partial = destination?.partial
        if let destination, let partial {
            guard FileManager.default.createFile(atPath: partial, contents: nil, attributes: [.posixPermissions: 0o600]),
                let handle = FileHandle(forWritingAtPath: partial)
            else { throw EddyError(.io, "cannot create \(partial) (for --out \(destination.path))") }
            target = handle
        } else if let destination {
            guard let handle = FileHandle(forWritingAtPath: destination.path) else {
                throw EddyError(.io, "cannot open --out \(destination.path) for writing")
            }
            target = handle
        } else {
            target = FileHandle.standardOutput
        }
        // A failed export leaves nothing behind but what --out held before.
        var finished = false
        defer { if !finished, let partial { unlink(partial) } }
        func report() {
            if self.out != nil, Date().timeIntervalSince(lastReport) >= 5 {
                lastReport = Date()
                FileHandle.standardError.write(Data("exported \(String(format: "%.1f", Double(written) / 1_048_576)) MiB\n".utf8))
            }
        }
        var leaves: Int? = nil
        if let http {
            nonisolated(unsafe) var failure: (any Error)? = nil
            try http.stream(location, ns: self.ns, parameters: ["format": "export"]) { data in
                guard failure == nil else { return }
                do {
                    try target.write(contentsOf: data)
                } catch {
                    failure = error
                }
                written += data.count
                report()
            }
            if let failure { throw EddyError(.io, "writing the export: \(failure.localizedDescription)") }
        } else {
            leaves = try TreeExport.export(directory: directory, path: location) { bytes in
                try target.write(contentsOf: bytes)
                written += bytes.count
                report()
            }
        }
        if let destination {
            try target.write(contentsOf: Array("\n".utf8))
            if partial != nil { try target.synchronize() }
            try target.close()
            if let partial {
                guard rename(partial, destination.path) == 0 else {
                    throw EddyError(.io, "cannot rename \(partial) to \(destination.path) (errno \(errno))")
                }
            }
            finished = true
            let out = self.out ?? destination.path
            let seconds = Date().timeIntervalSince(started)
            FileHandle.standardError.write(
                Data(
                    "exported \(location) to \(out): \(String(format: "%.1f", Double(written) / 1_048_576)) MiB\(leaves.map { ", \($0) values" } ?? "") in \(String(format: "%.1f", seconds)) s\n"
                        .utf8))
        } else {
            try target.write(contentsOf: Array("\n".utf8))
        }
    }
}
