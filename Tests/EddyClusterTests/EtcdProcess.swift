// A real etcd (Debian's etcd-server) for the cluster tests: a temp data directory, client and
// peer URLs on free loopback ports. `make test` installs etcd-server when it runs as root; where
// the binary is missing, `EtcdProcess.available` is false and the tests are skipped with a note
// saying how to install it.

import EddyTesting
import Foundation
import Synchronization

final class EtcdProcess: Sendable {
    static let binary = ["/usr/bin/etcd", "/usr/local/bin/etcd"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static var available: Bool { Self.binary != nil }
    static let missing = "etcd is not installed (sudo apt-get install -y etcd-server; make test does this as root)"

    let directory: String
    let clientURL: String
    private let process: SpawnedProcess

    init() throws {
        guard let binary = Self.binary else { throw EtcdError(Self.missing) }
        self.directory = NSTemporaryDirectory() + "eddy-etcd-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
        let clientPort = try Self.freePort()
        let peerPort = try Self.freePort()
        self.clientURL = "http://127.0.0.1:\(clientPort)"
        let peerURL = "http://127.0.0.1:\(peerPort)"
        // Not Foundation's Process: see SpawnedProcess. Its standard output (a pipe) is never read:
        // etcd writes everything to standard error (the log file).
        let process = try SpawnedProcess(
            binary,
            [
                "--name", "test", "--data-dir", self.directory + "/data", "--listen-client-urls", self.clientURL,
                "--advertise-client-urls", self.clientURL, "--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
                "--initial-cluster", "test=\(peerURL)", "--logger", "zap", "--log-outputs", "stderr",
            ], errorPath: self.directory + "/etcd.log")
        self.process = process
        // Ready when its health endpoint answers.
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let data = try? Data(contentsOf: URL(string: self.clientURL + "/health")!), String(decoding: data, as: UTF8.self).contains("true") {
                return
            }
            guard process.isRunning else { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let log = (try? String(contentsOfFile: self.directory + "/etcd.log", encoding: .utf8)) ?? ""
        self.stop()
        throw EtcdError("etcd did not start: \(log.suffix(600))")
    }

    /// SIGSTOP: etcd stops answering (a partition, as every node sees it). Returns once the
    /// kernel reports it stopped (`SpawnedProcess.pause`).
    func pause() { self.process.pause() }
    func resume() { kill(self.process.pid, SIGCONT) }

    func stop() {
        kill(self.process.pid, SIGCONT)
        self.process.signal(SIGTERM)
        self.process.wait()
        try? FileManager.default.removeItem(atPath: self.directory)
    }

    /// A loopback TCP port nobody listens on right now.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw EtcdError("no free port") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

struct EtcdError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
