// EtcdClient against a real etcd: leases, keys, create-if-absent, and what an unreachable
// endpoint looks like.

import EddyModel
import Foundation
import Testing

@testable import EddyCluster

@Suite(.enabled(if: EtcdProcess.available, Comment(rawValue: EtcdProcess.missing)), .serialized)
struct EtcdClientTests {
    @Test func keysLeasesAndCreateIfAbsent() throws {
        let etcd = try EtcdProcess()
        defer { etcd.stop() }
        let client = try EtcdClient(urls: [etcd.clientURL])

        try client.put("/t/a", value: Array("one".utf8))
        try client.put("/t/b", value: Array("two".utf8))
        try client.put("/u/c", value: Array("other".utf8))
        #expect(try client.get("/t/a")?.value == Array("one".utf8))
        #expect(try client.get("/t/missing") == nil)
        #expect(try client.list(prefix: "/t/").map(\.key) == ["/t/a", "/t/b"])

        let lease = try client.grantLease(ttlSeconds: 30)
        let first = try client.createIfAbsent("/t/leader", value: Array("x".utf8), lease: lease)
        #expect(first.created)
        #expect(first.current?.value == Array("x".utf8))
        #expect(first.current?.lease == lease)
        #expect(first.current == (try client.get("/t/leader")), "the created key as etcd stores it (revisions included)")
        let second = try client.createIfAbsent("/t/leader", value: Array("y".utf8), lease: lease)
        #expect(!second.created)
        #expect(second.current?.value == Array("x".utf8), "an existing key is left as it was")
        #expect(second.current?.createRevision == first.current?.createRevision)

        #expect(try client.keepAlive(lease: lease) > 0)
        try client.revoke(lease: lease)
        #expect(try client.keepAlive(lease: lease) == 0, "a revoked lease is reported expired")
        #expect(try client.get("/t/leader") == nil, "keys on a revoked lease go with it")

        // A new creation of the same key gets a higher create revision (the election's term).
        let again = try client.createIfAbsent("/t/leader", value: Array("z".utf8), lease: try client.grantLease(ttlSeconds: 30))
        #expect(again.created)
        #expect((again.current?.createRevision ?? 0) > (first.current?.createRevision ?? .max))

        try client.delete("/t/a")
        #expect(try client.get("/t/a") == nil)
    }

    @Test func aDeadEndpointIsSkippedAndNoneAnsweringNamesThemAll() throws {
        let etcd = try EtcdProcess()
        defer { etcd.stop() }
        let dead = "http://127.0.0.1:\(try EtcdProcess.freePort())"
        let client = try EtcdClient(urls: [dead, etcd.clientURL], timeout: .seconds(1))
        try client.put("/k", value: [1])
        #expect(try client.get("/k")?.value == [1])

        let none = try EtcdClient(urls: [dead], timeout: .milliseconds(500))
        do {
            _ = try none.get("/k")
            Issue.record("a dead endpoint answered")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message.contains(dead.dropFirst("http://".count)))
        }
    }

    @Test func aPausedEtcdCostsACallItsTimeoutNotAHang() throws {
        let etcd = try EtcdProcess()
        defer { etcd.stop() }
        let client = try EtcdClient(urls: [etcd.clientURL], timeout: .milliseconds(500))
        try client.put("/k", value: [1])
        etcd.pause()
        defer { etcd.resume() }
        do {
            _ = try client.get("/k")
            Issue.record("a paused etcd answered")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("no answer"), "\(error.message)")
        }
    }

    @Test func endpointURLsAreCheckedAtOnce() {
        #expect(throws: EddyError.self) { try EtcdClient(urls: []) }
        #expect(throws: EddyError.self) { try EtcdClient(urls: ["https://127.0.0.1:2379"]) }
        #expect(throws: EddyError.self) { try EtcdClient(urls: ["http://127.0.0.1:notaport"]) }
        #expect(throws: EddyError.self) { try EtcdClient(urls: ["http://:2379"]) }
        #expect((try? EtcdClient(urls: ["http://etcd.example"]))?.endpoints.first?.port == 2379)
    }

    @Test func chunkedAnswersAreJoined() throws {
        let body = try EtcdHTTPExchange.dechunk(Array("4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n".utf8)[...])
        #expect(String(decoding: body, as: UTF8.self) == "{\"a\":1}")
        #expect(throws: EddyError.self) { try EtcdHTTPExchange.dechunk(Array("4\r\n{\"a\"\r\n".utf8)[...]) }
    }
}
