// `eddy cluster status`: a cluster's nodes as etcd records them (`eddyd serve --cluster`): who
// holds the leader key (the lease holder) and in which term, each live node's role, applied log
// id and lag behind the leader (push-id time), and the addresses it serves. Reads etcd only, so
// it works while any node is down.

import ArgumentParser
import EddyCluster
import EddyModel
import Foundation

struct ClusterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster", abstract: "Inspect an eddyd cluster through its etcd.", subcommands: [ClusterStatus.self])
}

struct ClusterStatus: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print a cluster's nodes, roles, term, lag and lease holder as JSON.",
        discussion: #"""
            {"cluster", "leader": {"node", "term", "lease"} or null, "nodes": {<node>: {"role", "applied", "term",
            "lagMilliseconds", "http", "replication"}}} (a node's term: that of its newest entry). A node appears while its lease lives (a few seconds
            after it died); the term is the leader key's etcd create revision and only grows.
            """#)
    @Option(name: .long, help: "etcd endpoints, comma-separated http://HOST:PORT") var etcd: String
    @Option(name: .long, help: "The cluster's name (eddyd serve --cluster)") var cluster: String

    func run() throws {
        do {
            let client = try EtcdClient(urls: self.etcd.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) })
            let leaderKey = try client.get("/eddy/\(self.cluster)/leader")
            let leader = try leaderKey.map { key throws(EddyError) in try ClusterNodeRecord(bytes: key.value) }
            var nodes: [String: Value] = [:]
            let entries = try client.list(prefix: "/eddy/\(self.cluster)/nodes/")
            let records = entries.compactMap { entry in (try? ClusterNodeRecord(bytes: entry.value)).map { (entry, $0) } }
            // The lag is measured against the leader's own record (republished every tick), not
            // the leader key's copy, which is as of the election.
            let leaderNow = records.first { $0.0.lease == leaderKey?.lease && $0.1.node == leader?.node }?.1 ?? leader
            for (entry, record) in records {
                var object: [String: Value] = [
                    "role": .string(record.node == leader?.node && entry.lease == leaderKey?.lease ? "leader" : "follower"),
                    "applied": record.applied.map { .string($0.rawValue) } ?? .null,
                    "term": .number(Double(record.term)),
                    "http": record.http.map { .string($0) } ?? .null,
                    "replication": record.replication.map { .string($0) } ?? .null,
                ]
                if let leaderNow {
                    let ahead = leaderNow.applied?.timestampMilliseconds ?? 0
                    let behind = record.applied?.timestampMilliseconds ?? 0
                    object["lagMilliseconds"] = .number(Double(ahead > behind ? ahead - behind : 0))
                }
                nodes[record.node] = .object(object)
            }
            let status: Value = .object([
                "cluster": .string(self.cluster),
                "leader": leader.map { record in
                    .object([
                        "node": .string(record.node), "term": .number(Double(leaderKey?.createRevision ?? 0)),
                        "lease": .string(String(leaderKey?.lease ?? 0)),
                    ])
                } ?? .null,
                "nodes": .object(nodes),
            ])
            print(JSONWriter.string(status))
        } catch {
            FileHandle.standardError.write(Data("eddy: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }
}
