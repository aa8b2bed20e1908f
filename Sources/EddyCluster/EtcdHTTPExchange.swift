// One HTTP/1.1 POST of a JSON body to an etcd endpoint and its JSON answer, on a new blocking TCP
// connection that every step of bounds by the deadline (connect, send, each read): an etcd that
// stops answering (paused, partitioned) costs a caller at most `timeout`, never a hang. The
// answer's body is read by Content-Length, chunked transfer coding, or to the end of the
// connection (the request says `Connection: close`), and is capped at `responseBytesMax`.
//
// Blocking on purpose: the election runs on its own thread (as the follower runtime does), and a
// call per tick needs no event loop.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import EddyModel
import Foundation

struct EtcdHTTPExchange {
    /// An etcd answer is a small JSON document; anything larger is refused.
    static let responseBytesMax = 8 << 20

    let host: String
    let port: Int
    let timeout: Duration

    /// POSTs `body` to `path`; returns the HTTP status and the parsed JSON body.
    func post(_ path: String, _ body: String) throws(EddyError) -> (status: Int, body: Value) {
        let deadline = ContinuousClock.now.advanced(by: self.timeout)
        let fd = try self.connect(deadline: deadline)
        defer { close(fd) }
        let payload = Array(body.utf8)
        var request = Array(
            ("POST \(path) HTTP/1.1\r\nHost: \(self.host):\(self.port)\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(payload.count)\r\nConnection: close\r\n\r\n").utf8)
        request += payload
        try self.send(fd, request, deadline: deadline)
        let raw = try self.readAll(fd, deadline: deadline)
        return try Self.parseResponse(raw, from: self.display)
    }

    var display: String { "http://\(self.host):\(self.port)" }

    // MARK: Socket

    private func connect(deadline: ContinuousClock.Instant) throws(EddyError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(self.host, String(self.port), &hints, &list) == 0, let first = list else {
            throw EddyError(.unavailable, "etcd at \(self.display): cannot resolve \(self.host)")
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            if fd < 0 { continue }
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            var result = Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen)
            if result != 0, errno == EINPROGRESS {
                result = Self.wait(fd, events: Int16(POLLOUT), deadline: deadline) ? 0 : -1
                if result == 0 {
                    var error: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                    if error != 0 {
                        lastError = String(cString: strerror(error))
                        result = -1
                    }
                } else {
                    lastError = "no connection within \(self.timeout)"
                }
            } else if result != 0 {
                lastError = String(cString: strerror(errno))
            }
            if result == 0 { return fd }
            close(fd)
        }
        throw EddyError(.unavailable, "etcd at \(self.display): cannot connect: \(lastError)")
    }

    /// Polls `fd` for `events` until `deadline`; false on timeout or error.
    private static func wait(_ fd: Int32, events: Int16, deadline: ContinuousClock.Instant) -> Bool {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return false }
            let milliseconds = Int32(clamping: max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready > 0 { return true }
            if ready < 0, errno == EINTR { continue }
            if ready < 0 { return false }
        }
    }

    private func send(_ fd: Int32, _ bytes: [UInt8], deadline: ContinuousClock.Instant) throws(EddyError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if written > 0 {
                offset += written
            } else if written < 0, errno == EAGAIN || errno == EINTR {
                guard Self.wait(fd, events: Int16(POLLOUT), deadline: deadline) else {
                    throw EddyError(.unavailable, "etcd at \(self.display): no answer within \(self.timeout)")
                }
            } else {
                throw EddyError(.unavailable, "etcd at \(self.display): send failed: \(String(cString: strerror(errno)))")
            }
        }
    }

    private func readAll(_ fd: Int32, deadline: ContinuousClock.Instant) throws(EddyError) -> [UInt8] {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            // Done as soon as the answer is complete (etcd may keep the connection open).
            if let complete = Self.completeLength(received), complete <= received.count { return Array(received[..<complete]) }
            guard Self.wait(fd, events: Int16(POLLIN), deadline: deadline) else {
                throw EddyError(.unavailable, "etcd at \(self.display): no answer within \(self.timeout)")
            }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += chunk[..<count]
                guard received.count <= Self.responseBytesMax else {
                    throw EddyError(.limitExceeded, "etcd at \(self.display): answer larger than \(Self.responseBytesMax) bytes")
                }
            } else if count == 0 {
                return received
            } else if errno != EAGAIN, errno != EINTR {
                throw EddyError(.unavailable, "etcd at \(self.display): receive failed: \(String(cString: strerror(errno)))")
            }
        }
    }

    // MARK: HTTP

    /// The length of the whole answer once its head says it (Content-Length) or its last chunk
    /// arrived (chunked); nil while unknown.
    static func completeLength(_ bytes: [UInt8]) -> Int? {
        guard let headEnd = Self.headEnd(bytes) else { return nil }
        let head = String(decoding: bytes[..<headEnd], as: UTF8.self).lowercased()
        if let range = head.range(of: "\r\ncontent-length:") {
            let digits = head[range.upperBound...].prefix { $0 != "\r" }.trimmingSpaces
            return Int(digits).map { headEnd + 4 + $0 }
        }
        if head.contains("\r\ntransfer-encoding: chunked") {
            guard (try? Self.dechunk(bytes[(headEnd + 4)...])) != nil else { return nil }
            return bytes.count
        }
        return nil
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }

    /// The body of a chunked answer; throws while it is incomplete or malformed.
    static func dechunk(_ bytes: ArraySlice<UInt8>) throws(EddyError) -> [UInt8] {
        var body: [UInt8] = []
        var index = bytes.startIndex
        while true {
            guard let lineEnd = bytes[index...].firstIndex(of: 13), lineEnd + 1 < bytes.endIndex, bytes[lineEnd + 1] == 10 else {
                throw EddyError(.invalidArgument, "incomplete chunk")
            }
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).prefix { $0 != ";" }
            guard let size = Int(sizeText.trimmingSpaces, radix: 16), size >= 0 else {
                throw EddyError(.invalidArgument, "bad chunk size \(sizeText.debugDescription)")
            }
            index = lineEnd + 2
            if size == 0 { return body }
            guard bytes.endIndex - index >= size + 2 else { throw EddyError(.invalidArgument, "incomplete chunk") }
            body += bytes[index..<(index + size)]
            index += size + 2
        }
    }

    static func parseResponse(_ raw: [UInt8], from display: String) throws(EddyError) -> (status: Int, body: Value) {
        guard let headEnd = Self.headEnd(raw) else {
            throw EddyError(.unavailable, "etcd at \(display): the connection ended before a whole answer")
        }
        let head = String(decoding: raw[..<headEnd], as: UTF8.self)
        let statusLine = head.prefix { $0 != "\r" }.split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw EddyError(.unavailable, "etcd at \(display): not an HTTP answer: \(String(statusLine.joined(separator: " ").prefix(80)).debugDescription)")
        }
        var body = Array(raw[(headEnd + 4)...])
        if head.lowercased().contains("\r\ntransfer-encoding: chunked") { body = try Self.dechunk(body[...]) }
        if let length = Self.completeLength(raw), length < raw.count { body = Array(raw[(headEnd + 4)..<length]) }
        do {
            return (status, body.isEmpty ? .null : try JSONParser.parse(body))
        } catch {
            throw EddyError(.unavailable, "etcd at \(display): answered HTTP \(status) with a body that is not JSON")
        }
    }
}

extension StringProtocol {
    fileprivate var trimmingSpaces: String {
        String(self.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
