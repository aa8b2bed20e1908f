// `eddy stats`: one JSON line per namespace of a data directory (a running daemon's or a stopped
// one): database id, last and pruned-through log ids, SST, pending-compaction and log bytes,
// index counts. For the live figures of a running daemon, scrape `/metrics`.

import ArgumentParser
import EddyEngine
import EddyModel
import Foundation
import Logging

struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Print one JSON line of storage figures per namespace (works beside a running daemon).")

    @Option(name: .long, help: "Data directory. Default: ./data") var data = "./data"

    func run() async throws {
        do {
            let directory = DataDirectory.listing(self.data)
            guard !directory.isEmpty else { throw EddyError(.notFound, "no namespace in \(self.data)") }
            for name in directory {
                guard case .object(var figures) = try ReadOnlyLog.stats(directory: self.data + "/" + name) else { continue }
                figures["namespace"] = .string(name)
                printLine(JSONWriter.string(.object(figures)))
            }
        } catch let error as EddyError {
            FileHandle.standardError.write(Data("eddy: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }
}
