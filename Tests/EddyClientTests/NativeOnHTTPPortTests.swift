// `http://host:port` URLs and `useEmulator(withHost:port:)` take the native protocol on eddyd's
// HTTP port (which tells the two apart by a connection's first byte), and keep REST and SSE
// where the server there does not answer natively, or when `?transport=rest` asks for them.

import Dispatch
@testable import EddyClient
import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif
import Testing

@Suite(.serialized) struct NativeOnHTTPPortTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.client.native-on-http")

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    @Test func anHTTPURLAndTheEmulatorTakeTheNativeProtocolOnEddydsHTTPPort() async throws {
        let url = try #require(URL(string: self.daemon.httpURL))
        let byURL = Database.database(url: self.daemon.httpURL + "?ns=by-url", callingBackOn: self.queue)
        #expect(byURL.connection is ClientConnection)
        let emulated = Database.database(url: "https://by-emulator.firebaseio.com", callingBackOn: self.queue)
        emulated.useEmulator(withHost: url.host!, port: url.port!)
        #expect(emulated.connection is ClientConnection)

        let (nativeBefore, sseBefore) = (try await self.daemon.subscriptions(over: "native"), try await self.daemon.subscriptions(over: "sse"))
        let heard = Recorder<String>()
        let byURLHandle = byURL.reference(withPath: "probe/a").observe(.value) { heard.add("url \($0.value ?? "nil")") }
        let emulatedHandle = emulated.reference(withPath: "probe/a").observe(.value) { heard.add("emulator \($0.value ?? "nil")") }
        _ = try await heard.wait(for: 2)
        try await byURL.reference(withPath: "probe/a").setValue("in by-url")
        try await emulated.reference(withPath: "probe/a").setValue("in by-emulator")
        let all = try await heard.wait(for: 4)
        #expect(Set(all) == ["url <null>", "emulator <null>", "url in by-url", "emulator in by-emulator"], "each in its namespace: \(all)")
        #expect(try await self.daemon.subscriptions(over: "native") == nativeBefore + 2)
        #expect(try await self.daemon.subscriptions(over: "sse") == sseBefore)

        // The same data over REST, in the namespaces the URLs named.
        let (body, _) = try await URLSession.shared.data(from: URL(string: self.daemon.httpURL + "/probe/a.json?ns=by-emulator")!)
        #expect(String(decoding: body, as: UTF8.self) == #""in by-emulator""#)
        byURL.reference(withPath: "probe/a").removeObserver(withHandle: byURLHandle)
        emulated.reference(withPath: "probe/a").removeObserver(withHandle: emulatedHandle)
    }

    @Test func restAndSSEWhereAskedForOrWhereNoNativeAnswerComes() async throws {
        #expect(Database.database(url: self.daemon.restURL).connection is HTTPTransport)
        // A server that answers HTTP only (a proxy, say) keeps the fallback.
        let server = try HTTPOnlyServer()
        #expect(Database.database(url: server.url).connection is HTTPTransport)
        #expect(server.connections >= 1, "the probe reached it")
        // So does a port nobody listens on (a daemon not started yet).
        let closed = try HTTPOnlyServer()
        let closedURL = closed.url
        closed.stop()
        #expect(Database.database(url: closedURL + "?ns=later").connection is HTTPTransport)
        // https URLs are not probed: TLS is REST's.
        #expect(Database.transport("https://127.0.0.1:1") is HTTPTransport)
        // Nor host names but localhost (no DNS lookup, see below): a made-up URL keeps REST.
        #expect(Database.transport("http://foo.bar.invalid:9000") is HTTPTransport)
    }

    @Test func onlyAddressesAndLocalhostAreProbed() throws {
        for host in ["127.0.0.1", "::1", "[::1]", "10.0.2.2", "localhost", "LocalHost"] {
            #expect(NativeProbe.isAddressOrLocalhost(host), "\(host)")
        }
        for host in ["foo.bar.com", "localhost.example", "my-emulator", "127.0.0.1.nip.io"] {
            #expect(!NativeProbe.isAddressOrLocalhost(host), "\(host)")
        }
        let port = try #require(URL(string: self.daemon.httpURL)?.port)
        #expect(Database.database(url: "http://localhost:\(port)?ns=by-name").connection is ClientConnection)
    }
}

/// Answers every connection with `400 Bad Request` and closes it, as an HTTP server does with
/// bytes that are not HTTP.
final class HTTPOnlyServer: @unchecked Sendable {
    private let fd: Int32
    let port: Int
    private final class Counts: Sendable {
        let accepted = Mutex(0)
        let stopped = Mutex(false)
    }
    private let counts = Counts()
    var connections: Int { self.counts.accepted.withLock { $0 } }
    var url: String { "http://127.0.0.1:\(self.port)" }

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 8) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        let counts = self.counts
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                counts.accepted.withLock { $0 += 1 }
                var buffer = [UInt8](repeating: 0, count: 1024)
                _ = recv(client, &buffer, buffer.count, 0)
                let answer = Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
                _ = send(client, answer, answer.count, Int32(MSG_NOSIGNAL))
                close(client)
            }
        }
    }

    func stop() {
        guard !self.counts.stopped.withLock({ was in defer { was = true }; return was }) else { return }
        shutdown(self.fd, Int32(SHUT_RDWR))
        close(self.fd)
    }

    deinit { self.stop() }
}
