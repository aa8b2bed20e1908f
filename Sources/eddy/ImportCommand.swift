// `eddy import FILE.json [--path P]`: a Firebase JSON export of any size, streamed
// (`JSONLeafStream`) into a running daemon (its native socket) or, with none running, the data
// directory, in batches that are each one atomic multi-path update. Memory stays bounded by one
// batch (`--batch-bytes`) and the parser's buffer, whatever the file's size.
//
// Replace or merge: by default the import replaces the value at P (P is removed first, so readers
// see it fill up batch by batch); `--merge` writes over what is there and keeps the rest.
// Resumable: after each acknowledged batch the byte offset reached is recorded in a progress file
// (`FILE.eddy-import-progress`, or `--progress-file`). Run the same command again after an
// interruption and it skips what was written (P is not removed again); a batch applied just
// before the interruption may be written twice, which changes nothing. The progress file is
// deleted when the import completes; one that does not match the file (size, modification time,
// path, mode) is refused rather than guessed at.
// Progress on stderr: bytes, percent, values/s, MiB/s and ETA, in place on a terminal and one line
// every 5 s otherwise.
// Firebase's export format: `{".value": v}` imports as `v`, a null `.priority` is left out, and
// other priorities are kept: each batch's priorities are written by a second update right after
// its values (a priority is kept only on a node that exists, and the file may name it before
// the node's values). `--drop-priorities` leaves them out; a priority of the database's root,
// which Eddy does not keep, is left out and counted.

import ArgumentParser
import EddyEngine
import EddyModel
import Foundation
import Logging
import Synchronization

struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Stream a JSON file (a Firebase export) into the database, in atomic batches, resumable.",
        discussion: "Exit status: 0 imported, 1 error (the progress file lets the same command resume).")

    @OptionGroup var options: DataOptions
    @Argument(help: "The JSON file.") var file: String
    @Option(name: .long, help: "Where the file's value goes. Default: /") var path = "/"
    @Flag(name: .long, help: "Write over what is at --path and keep the rest, instead of replacing it.") var merge = false
    @Option(name: .customLong("batch-bytes"), help: "Approximate JSON bytes per atomic batch (65536 to 67108864). Default: 4194304") var batchBytes = 4 << 20
    @Option(name: .customLong("progress-file"), help: "Where the resume point is kept. Default: FILE.eddy-import-progress") var progressFile: String?
    @Flag(
        name: .customLong("drop-priorities"),
        help: "Leave out the priorities (.priority keys) of a Firebase export instead of importing them.")
    var dropPriorities = false

    static let batchValuesMax = Limits.updatePathsCountMax

    func validate() throws {
        guard (65536...(64 << 20)).contains(self.batchBytes) else { throw ValidationError("--batch-bytes \(self.batchBytes) is out of range 65536...67108864") }
    }

    func run() async throws {
        do {
            try self.importFile()
        } catch let error as EddyError {
            FileHandle.standardError.write(Data("\neddy: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }

    private struct Progress: Equatable {
        var size: Int
        var modified: Double
        var path: String
        var merge: Bool
        var offset: Int
        var values: Int

        var json: Value {
            .object([
                "size": .number(Double(self.size)), "modified": .number(self.modified), "path": .string(self.path), "merge": .bool(self.merge),
                "offset": .number(Double(self.offset)), "values": .number(Double(self.values)),
            ])
        }

        init(size: Int, modified: Double, path: String, merge: Bool, offset: Int, values: Int) {
            (self.size, self.modified, self.path, self.merge, self.offset, self.values) = (size, modified, path, merge, offset, values)
        }

        init?(_ value: Value) {
            guard case .number(let size) = value["size"], case .number(let modified) = value["modified"], case .string(let path) = value["path"],
                case .bool(let merge) = value["merge"], case .number(let offset) = value["offset"], case .number(let values) = value["values"]
            else { return nil }
            self.init(size: Int(size), modified: modified, path: path, merge: merge, offset: Int(offset), values: Int(values))
        }

        func sameImport(as other: Progress) -> Bool {
            self.size == other.size && self.modified == other.modified && self.path == other.path && self.merge == other.merge
        }
    }

    /// Writes the progress file atomically (a temporary file renamed over it).
    private static func save(_ progress: Progress, to path: String) throws(EddyError) {
        let temporary = path + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(JSONWriter.bytes(progress.json))), rename(temporary, path) == 0 else {
            throw EddyError(.io, "cannot write the progress file \(path) (errno \(errno))")
        }
    }

    private func importFile() throws {
        let location = try Path(self.path)
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: self.file)
        } catch {
            throw EddyError(.notFound, "cannot read \(self.file): \(error.localizedDescription)")
        }
        let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
        let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        guard let handle = FileHandle(forReadingAtPath: self.file) else { throw EddyError(.notFound, "cannot open \(self.file)") }
        defer { try? handle.close() }
        let progressPath = self.progressFile ?? self.file + ".eddy-import-progress"
        var progress = Progress(size: size, modified: modified, path: location.description, merge: self.merge, offset: 0, values: 0)
        if let data = FileManager.default.contents(atPath: progressPath) {
            guard let saved = (try? JSONParser.parse(Array(data))).flatMap(Progress.init), saved.sameImport(as: progress) else {
                throw EddyError(
                    .invalidArgument,
                    "\(progressPath) belongs to another import (a different file, --path or --merge); delete it to start over")
            }
            progress = saved
            FileHandle.standardError.write(Data("eddy: resuming at byte \(saved.offset) of \(size) (\(saved.values) values written)\n".utf8))
        }
        let sink = try ImportSink(options: self.options)
        defer { sink.close() }
        if progress.offset == 0, !self.merge {
            // A file that cannot be imported whole must not cost the data it would replace.
            try self.check(size: size, at: location)
            try sink.write(.remove(location))
        }

        var stream = self.leafStream(reading: handle)
        var batch: [String: Value] = [:]
        var batchPriorities: [String: Value] = [:]
        var batchBytes = 0
        var batchEnd = progress.offset
        var meter = ImportMeter(totalBytes: size, startOffset: progress.offset, startValues: progress.values)
        let skipThrough = progress.offset
        var rootValue: Value? = nil
        var droppedPriorities = 0
        func flush() throws {
            guard !batch.isEmpty || !batchPriorities.isEmpty else { return }
            if !batch.isEmpty { try sink.write(try WriteOperation.update(at: location, body: .object(batch))) }
            if !batchPriorities.isEmpty { try sink.write(try WriteOperation.update(at: location, body: .object(batchPriorities))) }
            progress.values += batch.count
            progress.offset = batchEnd
            batch.removeAll(keepingCapacity: true)
            batchPriorities.removeAll(keepingCapacity: true)
            batchBytes = 0
            try Self.save(progress, to: progressPath)
            meter.report(offset: progress.offset, values: progress.values, final: false)
        }
        // Writes happen between leaves, synchronously: the parser never runs ahead of the
        // batch being written, so memory holds one batch.
        try stream.forEachLeaf { leafPath, value, end in
            guard end > skipThrough else { return true }
            var path = leafPath
            if path.last == Value.priorityKey {
                if value.isNull { return true }
                if self.dropPriorities || (location.isRoot && path.count == 1) {
                    droppedPriorities += 1
                    return true
                }
                let key = path.joined(separator: "/")
                batchPriorities[key] = value
                batchBytes += key.utf8.count + value.approximateBytes
                batchEnd = end
                // No flush here: the node's values may follow, and a priority written before
                // its node exists is not kept (a node nests at most pathDepthMax priorities).
                return true
            }
            if path.last == ".value" { path.removeLast() }  // the wrapped value of its parent
            if path.isEmpty {
                rootValue = value  // the document is a single primitive
                return true
            }
            let key = path.joined(separator: "/")
            batch[key] = value
            batchBytes += key.utf8.count + value.approximateBytes
            batchEnd = end
            if batchBytes >= self.batchBytes || batch.count + batchPriorities.count >= Self.batchValuesMax { try flush() }
            return true
        }
        try flush()
        if let rootValue {
            try sink.write(.set(location, rootValue))
            progress.values += 1
        }
        try? FileManager.default.removeItem(atPath: progressPath)
        meter.report(offset: size, values: progress.values, final: true)
        if droppedPriorities > 0 {
            let why = self.dropPriorities ? "--drop-priorities" : "the root keeps no priority"
            FileHandle.standardError.write(Data("eddy: left out \(droppedPriorities) \(droppedPriorities == 1 ? "priority" : "priorities") (\(why))\n".utf8))
        }
    }
}

extension ImportCommand {
    /// The file's leaves, read from `handle`.
    fileprivate func leafStream(reading handle: FileHandle) -> JSONLeafStream {
        JSONLeafStream { buffer in
            let count = Glibc.read(handle.fileDescriptor, buffer.baseAddress, buffer.count)
            guard count >= 0 else { throw EddyError(.io, "reading \(self.file) failed: errno \(errno)") }
            return count
        }
    }

    /// Reads the whole file once before a replacing import removes anything: its JSON, its keys
    /// and its depth, as the daemon would check them batch by batch. A file refused halfway
    /// used to leave the location removed and half filled.
    fileprivate func check(size: Int, at location: Path) throws {
        guard let handle = FileHandle(forReadingAtPath: self.file) else { throw EddyError(.notFound, "cannot open \(self.file)") }
        defer { try? handle.close() }
        FileHandle.standardError.write(Data("eddy: checking \(self.file) (\(size) bytes) before it replaces \(location)\n".utf8))
        var stream = self.leafStream(reading: handle)
        try stream.forEachLeaf { leafPath, _, end in
            var keys = leafPath
            if keys.last == Value.priorityKey || keys.last == ".value" { keys.removeLast() }
            guard location.depth + keys.count <= Limits.pathDepthMax else {
                throw EddyError(
                    .invalidPath,
                    "\(self.file): the value ending at byte \(end) is \(location.depth + keys.count) keys deep under the root; pathDepthMax is \(Limits.pathDepthMax); nothing was imported")
            }
            for key in keys {
                do throws(EddyError) {
                    try Key.validate(key)
                } catch {
                    let shown = Path(validatedKeys: location.keys + keys).abbreviated
                    throw EddyError(error.code, "\(self.file), the value at \(shown) ending at byte \(end): \(error.message); nothing was imported")
                }
            }
            return true
        }
    }
}

/// Where an import's batches go: the running daemon, or the data directory when none answers.
/// Writes are synchronous (an offline write waits for the committer's completion on a
/// semaphore, never on a Swift concurrency thread).
final class ImportSink {
    private let daemon: (any DaemonLink)?
    private let directory: DataDirectory?
    private let engine: Engine?
    private let ns: String

    init(options: DataOptions) throws {
        self.ns = options.ns
        if let daemon = try options.daemon() {
            self.daemon = daemon
            self.directory = nil
            self.engine = nil
            return
        }
        self.daemon = nil
        do {
            try DataDirectory.validateNamespace(options.ns)
            let directory = try DataDirectory(
                path: options.data, options: EngineOptions(durability: .sync), logger: Logger(label: "eddy", factory: { _ in SwiftLogNoOpLogHandler() }))
            self.directory = directory
            self.engine = try directory.engine(namespace: options.ns)
        } catch {
            FileHandle.standardError.write(Data("eddy: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }

    func write(_ operation: WriteOperation) throws(EddyError) {
        if let daemon {
            switch operation {
            case .update(let path, let changes):
                var body: [String: Value] = [:]
                for change in changes { body[change.path.keys.joined(separator: "/")] = change.value }
                _ = try daemon.write("update", path, .object(body), ns: self.ns)
            case .set(let path, let value): _ = try daemon.write("set", path, value, ns: self.ns)
            case .remove(let path): _ = try daemon.write("remove", path, nil, ns: self.ns)
            case .push(let path, let value): _ = try daemon.write("push", path, value, ns: self.ns)
            }
            return
        }
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<WriteOutcome, EddyError>?>(nil)
        try self.engine!.submit(operation) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        _ = try outcome.withLock { $0! }.get()
    }

    func close() {
        self.directory?.close()
    }
}

/// The progress line: bytes and percent, values/s, MiB/s, ETA.
struct ImportMeter {
    let totalBytes: Int
    let startOffset: Int
    let startValues: Int
    let started = Date()
    var lastLine = Date.distantPast
    let terminal = isatty(STDERR_FILENO) == 1

    init(totalBytes: Int, startOffset: Int, startValues: Int) {
        self.totalBytes = totalBytes
        self.startOffset = startOffset
        self.startValues = startValues
    }

    mutating func report(offset: Int, values: Int, final: Bool) {
        let now = Date()
        guard final || (self.terminal ? now.timeIntervalSince(self.lastLine) >= 0.2 : now.timeIntervalSince(self.lastLine) >= 5) else { return }
        self.lastLine = now
        let seconds = max(now.timeIntervalSince(self.started), 0.001)
        let bytesPerSecond = Double(offset - self.startOffset) / seconds
        let valuesPerSecond = Double(values - self.startValues) / seconds
        let percent = self.totalBytes > 0 ? 100 * Double(offset) / Double(self.totalBytes) : 100
        let eta = bytesPerSecond > 0 ? Double(self.totalBytes - offset) / bytesPerSecond : 0
        let mib = { (bytes: Double) in String(format: "%.1f", bytes / 1_048_576) }
        let text =
            final
            ? "imported \(mib(Double(offset))) MiB, \(values) values in \(String(format: "%.1f", seconds)) s (\(mib(bytesPerSecond)) MiB/s, \(Int(valuesPerSecond)) values/s)"
            : "\(mib(Double(offset)))/\(mib(Double(self.totalBytes))) MiB (\(String(format: "%.1f", percent))%), \(values) values, \(Int(valuesPerSecond)) values/s, \(mib(bytesPerSecond)) MiB/s, ETA \(Int(eta)) s"
        if self.terminal {
            FileHandle.standardError.write(Data("\r\u{1B}[K\(text)\(final ? "\n" : "")".utf8))
        } else {
            FileHandle.standardError.write(Data("\(text)\n".utf8))
        }
    }
}
