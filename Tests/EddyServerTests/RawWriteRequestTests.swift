// `RawWriteRequest`, the raw reader of small write requests: what it takes, what it leaves to
// NIO's parser, and that a head it takes is the head NIO's decoder and `HTTP1ToHTTPServerCodec`
// make of the same bytes (random requests built from pieces both accept or one refuses, the
// seed printed).

import EddyTesting
import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import Testing

@testable import EddyServer

@Suite struct RawWriteRequestTests {
    static let max = 16 << 10

    func read(_ text: String) -> RawWriteRequest {
        RawWriteRequest.read(ByteBuffer(string: text), bodyBytesMax: Self.max)
    }

    /// The head NIO's server pipeline (decoder, then the HTTPTypes codec) reads from `text`,
    /// nil when it refuses it or reads no whole request.
    func nioHead(_ text: String) throws -> HTTPRequest? {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder()))
        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
        defer { _ = try? channel.finish() }
        do {
            try channel.writeInbound(ByteBuffer(string: text))
        } catch {
            return nil
        }
        guard case .head(let head) = try channel.readInbound(as: HTTPRequestPart.self) else { return nil }
        return head
    }

    @Test func takesAWholeWriteAndSaysWhereItEnds() throws {
        let text = "POST /items.json?print=silent HTTP/1.1\r\nHost: 127.0.0.1:9000\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}GET"
        guard case .complete(let head, let headBytes, let bodyBytes) = self.read(text) else {
            Issue.record("not taken")
            return
        }
        #expect(head.method == .post)
        #expect(head.path == "/items.json?print=silent")
        #expect(head.authority == "127.0.0.1:9000")
        #expect(head.headerFields[.contentType] == "application/json")
        #expect(head.headerFields[.contentLength] == "7")
        #expect(!head.headerFields.contains(HTTPField.Name("Host")!))
        #expect(bodyBytes == 7)
        #expect(headBytes + bodyBytes == text.utf8.count - 3)
        #expect(try self.nioHead(text) == head)
    }

    @Test func everyPrefixOfAWriteIsIncomplete() {
        let text = "PATCH /a/b.json HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\nAuthorization: Bearer x\r\n\r\n{\"b\": true }"
        let bytes = Array(text.utf8)
        for count in 0..<bytes.count {
            let result = RawWriteRequest.read(ByteBuffer(bytes: bytes[..<count]), bodyBytesMax: Self.max)
            guard case .incomplete = result else {
                Issue.record("prefix of \(count) bytes: \(result)")
                return
            }
        }
        guard case .complete = RawWriteRequest.read(ByteBuffer(bytes: bytes), bodyBytesMax: Self.max) else {
            Issue.record("whole request not taken")
            return
        }
    }

    @Test func leavesEverythingElseToTheParser() {
        let refused = [
            "GET /a.json HTTP/1.1\r\nHost: h\r\n\r\n",
            "G",
            "put /a.json HTTP/1.1\r\nContent-Length: 1\r\n\r\n1",
            "PUT /a.json HTTP/1.0\r\nContent-Length: 1\r\n\r\n1",
            "PUT a.json HTTP/1.1\r\nContent-Length: 1\r\n\r\n1",
            "PUT http://h/a.json HTTP/1.1\r\nContent-Length: 1\r\n\r\n1",
            "PUT /a\".json HTTP/1.1\r\nContent-Length: 1\r\n\r\n1",
            "PUT  /a.json HTTP/1.1\r\nContent-Length: 1\r\n\r\n1",
            "PUT /a.json HTTP/1.1\nContent-Length: 1\r\n\r\n1",
            "PUT /a.json HTTP/1.1\r\nContent-Length : 1\r\n\r\n1",
            "PUT /a.json HTTP/1.1\r\nContent-Length: 1 \r\n\r\n1",
            "PUT /a.json HTTP/1.1\r\nContent-Length: +1\r\n\r\n1",
            "PUT /a.json HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n1",
            "PUT /a.json HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n1",
            "PUT /a.json HTTP/1.1\r\nContent-Length: 16385\r\n\r\n1",
            "PUT /a.json HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n1\r\n0\r\n\r\n",
            "PUT /a.json HTTP/1.1\r\nContent-Length: 1\r\nUpgrade: h2c\r\n\r\n1",
            "PUT /a.json HTTP/1.1\r\nHost: a\r\nHost: b\r\nContent-Length: 1\r\n\r\n1",
            "PUT /a.json HTTP/1.1\r\nX-Note: caf\u{e9}\r\nContent-Length: 1\r\n\r\n1",
            "PUT /a.json HTTP/1.1\r\nX-Note: a\rb\r\nContent-Length: 1\r\n\r\n1",
            "PUT /a.json HTTP/1.1\r\n folded: x\r\nContent-Length: 1\r\n\r\n1",
            "PUT /a.json HTTP/1.1\r\n\r\n",
            "PUT /a.json HTTP/1.1\r\n" + String(repeating: "X-A: b\r\n", count: RawWriteRequest.fieldsMax) + "Content-Length: 1\r\n\r\n1",
            "PUT /a.json HTTP/1.1\r\nX-A: " + String(repeating: "b", count: RawWriteRequest.headBytesMax) + "\r\nContent-Length: 1\r\n\r\n1",
        ]
        for text in refused {
            guard case .notTaken = self.read(text) else {
                Issue.record("taken or waiting: \(text.debugDescription)")
                continue
            }
        }
    }

    /// Random requests from pieces that are either fine or something the reader must leave
    /// alone: whatever it takes, NIO reads as the same head (and never refuses).
    @Test func takesOnlyWhatNIOReadsTheSame() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        print("RawWriteRequestTests.takesOnlyWhatNIOReadsTheSame seed \(seed) (rerun with EDDY_SEED=\(seed))")
        var generator = SeededGenerator(seed: seed)
        let methods = ["PUT", "POST", "PATCH", "GET", "put", "DELETE"]
        let targets = ["/a.json", "/a/b.json?print=silent&auth=x", "/%7Ba%7D.json", "/a b.json", "/a\".json", "*", "/~x/(y)!.json"]
        let versions = ["HTTP/1.1", "HTTP/1.0", "HTTP/1.2", "http/1.1"]
        let fields = [
            "Host: 127.0.0.1", "host: example.com:9000", "Content-Type: application/json", "Authorization: Bearer owner",
            "X-Firebase-ETag: true", "if-match: \"abc\"", "Connection: keep-alive", "Connection: close", "Accept: */*",
            "X-Empty:", "X-Tab:\tvalue", "X-Spaces:   a  b", "Transfer-Encoding: chunked", "Expect: 100-continue",
            "X-Trailing: a ", "Bad Name: x", "X-Obs: \u{e9}", "X-Weird-~!#$%&'*+.^_`|: ok",
        ]
        var taken = 0
        for _ in 0..<4_000 {
            var head = "\(methods.randomElement(using: &generator)!) \(targets.randomElement(using: &generator)!) "
            head += versions.randomElement(using: &generator)! + "\r\n"
            for _ in 0..<Int.random(in: 0...5, using: &generator) { head += fields.randomElement(using: &generator)! + "\r\n" }
            let body = String(repeating: "1", count: Int.random(in: 1...20, using: &generator))
            if Int.random(in: 0..<8, using: &generator) > 0 { head += "Content-Length: \(body.utf8.count)\r\n" }
            let text = head + "\r\n" + body
            guard case .complete(let rawHead, let headBytes, let bodyBytes) = self.read(text) else { continue }
            taken += 1
            #expect(headBytes == head.utf8.count + 2 && bodyBytes == body.utf8.count, "\(text.debugDescription)")
            let nio = try self.nioHead(text)
            #expect(nio == rawHead, "\(text.debugDescription): NIO \(String(describing: nio)), raw \(rawHead)")
        }
        #expect(taken > 100)
    }
}
