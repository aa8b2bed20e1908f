// A small blocking Redis client (RESP2) for the redis fan-out benchmark: connects to a Unix socket
// (an address containing "/") or HOST:PORT, sends commands, reads replies through one fixed
// 64 KiB buffer. Like NativeClient, at most one thread sends and one thread receives at a time.

import Glibc

/// A reply in RESP2: simple string, error, integer, bulk string or array (nil: the null forms).
enum RESPValue {
    case simple(String)
    case error(String)
    case integer(Int)
    case bulk(String?)
    case array([RESPValue]?)
}

struct RESPError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

final class RESPClient: @unchecked Sendable {
    // @unchecked: `fd` is immutable; the read state is only used by the receiving thread.
    private let fd: Int32
    private let address: String
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
    /// Unread bytes are readBuffer[readStart..<readEnd].
    private var readStart = 0
    private var readEnd = 0
    /// Bounds on what one reply may hold, so a confused stream fails instead of eating memory.
    static let bulkBytesMax = 16 * 1024 * 1024
    static let arrayElementsMax = 1_000_000

    init(address: String) throws(RESPError) {
        self.address = address
        self.fd = address.contains("/") ? try Self.connectUnix(address) : try Self.connectTCP(address)
    }

    deinit {
        close(self.fd)
        self.readBuffer.deallocate()
    }

    private static func connectUnix(_ path: String) throws(RESPError) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RESPError("cannot create a socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw RESPError("socket path \(path) is longer than \(MemoryLayout.size(ofValue: address.sun_path) - 1) bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in bytes.enumerated() { raw[i] = byte }
        }
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw RESPError("cannot connect to redis at \(path): \(reason) (is redis-server running with this unixsocket?)")
        }
        return fd
    }

    private static func connectTCP(_ hostPort: String) throws(RESPError) -> Int32 {
        guard let colon = hostPort.lastIndex(of: ":"), !hostPort[hostPort.index(after: colon)...].isEmpty else {
            throw RESPError("redis address \(hostPort) is neither a socket path (with /) nor HOST:PORT")
        }
        let host = String(hostPort[..<colon]), port = String(hostPort[hostPort.index(after: colon)...])
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, port, &hints, &list)
        guard status == 0, let first = list else { throw RESPError("cannot resolve \(hostPort): \(String(cString: gai_strerror(status)))") }
        defer { freeaddrinfo(list) }
        var reason = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            guard fd >= 0 else { reason = String(cString: strerror(errno)); continue }
            if connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 {
                var on: Int32 = 1
                _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
                return fd
            }
            reason = String(cString: strerror(errno))
            close(fd)
        }
        throw RESPError("cannot connect to redis at \(hostPort): \(reason)")
    }

    /// Sends one command (an array of bulk strings) without waiting for its reply.
    func send(_ arguments: [String]) throws(RESPError) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16 + arguments.reduce(0) { $0 + $1.utf8.count + 16 })
        bytes.append(contentsOf: "*\(arguments.count)\r\n".utf8)
        for argument in arguments {
            bytes.append(contentsOf: "$\(argument.utf8.count)\r\n".utf8)
            bytes.append(contentsOf: argument.utf8)
            bytes.append(contentsOf: "\r\n".utf8)
        }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(self.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { throw RESPError("writing to redis at \(self.address) failed: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }

    /// Sends a command and returns its reply; an error reply or a closed connection throws.
    func command(_ arguments: [String]) throws(RESPError) -> RESPValue {
        try self.send(arguments)
        guard let reply = try self.receive() else { throw RESPError("redis at \(self.address) closed the connection after \(arguments.first ?? "")") }
        if case .error(let message) = reply { throw RESPError("redis \(arguments.joined(separator: " ")): \(message)") }
        return reply
    }

    /// The next reply; nil when the server closed the connection between replies.
    func receive() throws(RESPError) -> RESPValue? {
        guard let header = try self.line() else { return nil }
        guard let type = header.first else { throw RESPError("empty reply line from redis") }
        let rest = header.dropFirst()
        switch type {
        case UInt8(ascii: "+"): return .simple(String(decoding: rest, as: UTF8.self))
        case UInt8(ascii: "-"): return .error(String(decoding: rest, as: UTF8.self))
        case UInt8(ascii: ":"): return .integer(try Self.number(rest))
        case UInt8(ascii: "$"):
            let count = try Self.number(rest)
            guard count >= 0 else { return .bulk(nil) }
            guard count <= Self.bulkBytesMax else { throw RESPError("bulk string of \(count) bytes exceeds \(Self.bulkBytesMax)") }
            return .bulk(try self.bulk(count))
        case UInt8(ascii: "*"):
            let count = try Self.number(rest)
            guard count >= 0 else { return .array(nil) }
            guard count <= Self.arrayElementsMax else { throw RESPError("array of \(count) elements exceeds \(Self.arrayElementsMax)") }
            var elements: [RESPValue] = []
            elements.reserveCapacity(count)
            for _ in 0..<count {
                guard let element = try self.receive() else { throw RESPError("redis closed the connection in the middle of a reply") }
                elements.append(element)
            }
            return .array(elements)
        default:
            throw RESPError("unexpected reply type byte \(type) from redis")
        }
    }

    /// Walks the next reply and calls `visit` with the bytes of each bulk string in it, in
    /// order (arrays depth first), building no values: the fan-out subscribers' reader, which
    /// must cost about what Eddy's frame reader costs so that both servers are measured alike.
    /// False when the server closed between replies; an error reply throws.
    func receiveBulks(_ visit: (UnsafeBufferPointer<UInt8>) -> Void) throws(RESPError) -> Bool {
        guard let (type, number) = try self.header() else { return false }
        try self.walk(type, number, visit)
        return true
    }

    private func walk(_ type: UInt8, _ number: Int, _ visit: (UnsafeBufferPointer<UInt8>) -> Void) throws(RESPError) {
        switch type {
        case UInt8(ascii: "$"):
            guard number >= 0 else { return }
            guard number + 2 <= self.readBuffer.count else { throw RESPError("bulk string of \(number) bytes exceeds the read buffer") }
            guard try self.fill(number + 2) else { throw RESPError("redis closed the connection in a bulk string") }
            let base = self.readBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            visit(UnsafeBufferPointer(start: base + self.readStart, count: number))
            guard base[self.readStart + number] == UInt8(ascii: "\r"), base[self.readStart + number + 1] == UInt8(ascii: "\n") else {
                throw RESPError("bulk string without CRLF from redis")
            }
            self.readStart += number + 2
        case UInt8(ascii: "*"):
            guard number <= Self.arrayElementsMax else { throw RESPError("array of \(number) elements exceeds \(Self.arrayElementsMax)") }
            for _ in 0..<max(0, number) {
                guard let (elementType, elementNumber) = try self.header() else { throw RESPError("redis closed the connection in the middle of a reply") }
                try self.walk(elementType, elementNumber, visit)
            }
        default:
            return
        }
    }

    /// The next reply line's type byte and its number (0 for a simple string), read in place;
    /// nil when the server closed before it. An error line throws with its message.
    private func header() throws(RESPError) -> (UInt8, Int)? {
        guard let line = try self.nextLine() else { return nil }
        guard let type = line.first else { throw RESPError("empty reply line from redis") }
        let text = UnsafeBufferPointer(rebasing: line[1...])
        switch type {
        case UInt8(ascii: "-"): throw RESPError("redis replied an error: \(String(decoding: text, as: UTF8.self))")
        case UInt8(ascii: "+"): return (type, 0)
        default:
            var n = 0
            var negative = false
            for byte in text {
                if byte == UInt8(ascii: "-") { negative = true; continue }
                guard byte >= 0x30, byte <= 0x39 else { throw RESPError("bad number in reply line: \(String(decoding: text, as: UTF8.self))") }
                n = n * 10 + Int(byte - 0x30)
            }
            return (type, negative ? -n : n)
        }
    }

    private static func number(_ digits: ArraySlice<UInt8>) throws(RESPError) -> Int {
        guard let n = Int(String(decoding: digits, as: UTF8.self)) else {
            throw RESPError("bad length or integer in reply: \(String(decoding: digits, as: UTF8.self))")
        }
        return n
    }

    /// Reads until at least `count` bytes are unread; false when the server closed first.
    private func fill(_ count: Int) throws(RESPError) -> Bool {
        while self.readEnd - self.readStart < count {
            if self.readEnd == self.readBuffer.count {
                let unread = self.readEnd - self.readStart
                if unread > 0, let base = self.readBuffer.baseAddress { memmove(base, base + self.readStart, unread) }
                self.readStart = 0
                self.readEnd = unread
            }
            let count = read(self.fd, self.readBuffer.baseAddress! + self.readEnd, self.readBuffer.count - self.readEnd)
            if count == 0 { return false }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw RESPError("reading from redis at \(self.address) failed: \(String(cString: strerror(errno)))") }
            self.readEnd += count
        }
        return true
    }

    /// The next line without its CRLF; nil when the server closed before any of it arrived.
    private func line() throws(RESPError) -> [UInt8]? {
        try self.nextLine().map { Array($0) }
    }

    /// The next line without its CRLF, in the read buffer (valid until the next read); nil when
    /// the server closed before any of it arrived.
    private func nextLine() throws(RESPError) -> UnsafeBufferPointer<UInt8>? {
        var scanned = 0
        while true {
            let base = self.readBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var i = self.readStart + scanned
            while i < self.readEnd {
                if base[i] == UInt8(ascii: "\n") {
                    guard i > self.readStart, base[i - 1] == UInt8(ascii: "\r") else { throw RESPError("reply line without CRLF from redis") }
                    let line = UnsafeBufferPointer(start: base + self.readStart, count: i - 1 - self.readStart)
                    self.readStart = i + 1
                    return line
                }
                i += 1
            }
            scanned = self.readEnd - self.readStart
            guard scanned < self.readBuffer.count else { throw RESPError("reply line longer than \(self.readBuffer.count) bytes from redis") }
            guard try self.fill(scanned + 1) else {
                if scanned == 0 { return nil }
                throw RESPError("redis closed the connection in the middle of a line")
            }
        }
    }

    /// A bulk string's `count` bytes and its CRLF.
    private func bulk(_ count: Int) throws(RESPError) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        while bytes.count < count {
            if self.readStart == self.readEnd, !(try self.fill(1)) { throw RESPError("redis closed the connection in a bulk string") }
            let take = min(count - bytes.count, self.readEnd - self.readStart)
            let base = self.readBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            bytes.append(contentsOf: UnsafeBufferPointer(start: base + self.readStart, count: take))
            self.readStart += take
        }
        guard try self.fill(2) else { throw RESPError("redis closed the connection after a bulk string") }
        let base = self.readBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
        guard base[self.readStart] == UInt8(ascii: "\r"), base[self.readStart + 1] == UInt8(ascii: "\n") else {
            throw RESPError("bulk string without CRLF from redis")
        }
        self.readStart += 2
        return String(decoding: bytes, as: UTF8.self)
    }
}
