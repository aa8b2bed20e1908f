// What a start finds after a bootstrap was interrupted: a transfer cut short is discarded and
// the old replica kept; a complete snapshot whose swap was cut short is swapped in; the
// earlier versions' marker still makes the bootstrap start over.

import Foundation
import Logging
import Testing

@testable import EddyReplication

@Suite struct FollowerBootstrapRecoveryTests {
    let logger = Logger(label: "test")

    func scratch() throws -> (root: String, directory: String, incoming: String) {
        let root = NSTemporaryDirectory() + "bootstrap-recovery-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        return (root, root + "/default", root + "/default.incoming")
    }

    func write(_ text: String, to path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    func read(_ path: String) -> String? {
        (try? Data(contentsOf: URL(fileURLWithPath: path))).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func anInterruptedTransferIsDiscardedAndTheReplicaKept() throws {
        let (root, directory, incoming) = try self.scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try self.write("old", to: directory + "/CURRENT")
        try self.write("half", to: incoming + "/CURRENT")
        try FollowerBootstrap.recover(directory: directory, incoming: incoming, logger: self.logger)
        #expect(self.read(directory + "/CURRENT") == "old")
        #expect(!FileManager.default.fileExists(atPath: incoming))
    }

    @Test func anInterruptedSwapIsFinished() throws {
        let (root, directory, incoming) = try self.scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try self.write("old", to: directory + "/CURRENT")
        try self.write("new", to: incoming + "/CURRENT")
        try self.write("", to: incoming + "/" + FollowerBootstrap.completeFile)
        try FollowerBootstrap.recover(directory: directory, incoming: incoming, logger: self.logger)
        #expect(self.read(directory + "/CURRENT") == "new")
        #expect(!FileManager.default.fileExists(atPath: incoming))
        #expect(!FileManager.default.fileExists(atPath: directory + "/" + FollowerBootstrap.completeFile))
        // Renamed, then cut before the complete file went: that file is just removed.
        try self.write("", to: directory + "/" + FollowerBootstrap.completeFile)
        try FollowerBootstrap.recover(directory: directory, incoming: incoming, logger: self.logger)
        #expect(self.read(directory + "/CURRENT") == "new")
        #expect(!FileManager.default.fileExists(atPath: directory + "/" + FollowerBootstrap.completeFile))
    }

    @Test func theEarlierMarkerStartsTheBootstrapOver() throws {
        let (root, directory, incoming) = try self.scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try self.write("half-written", to: directory + "/CURRENT")
        try self.write("", to: directory + ".bootstrapping")
        try FollowerBootstrap.recover(directory: directory, incoming: incoming, logger: self.logger)
        #expect(!FileManager.default.fileExists(atPath: directory))
        #expect(!FileManager.default.fileExists(atPath: directory + ".bootstrapping"))
    }
}
