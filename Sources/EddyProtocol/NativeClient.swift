// A blocking client of the native protocol for tools (`eddy watch`, benchmarks) and the
// follower runtime: connects to a Unix socket (or, for replication, HOST:PORT over TCP), sends
// frames, reads frames. At most one thread sends and one thread
// receives at a time (the socket allows both at once); not for servers.

import Glibc

public final class NativeClient: @unchecked Sendable {
    // @unchecked: `fd` is immutable; `decoder`, `readBuffer` and `receiveTimeoutSeconds` are only
    // used by the receiving thread.
    private let fd: Int32
    private var decoder = FrameDecoder(lengthMax: Frame.fromServerBytesMax)
    /// Where `receive` reads the socket into, allocated once.
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)

    /// `address` is a Unix socket path (anything with a "/") or HOST:PORT for TCP.
    public convenience init(address: String) throws(ProtocolError) {
        if address.contains("/") {
            try self.init(path: address)
            return
        }
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
            throw ProtocolError("address \(address) is neither a socket path nor HOST:PORT")
        }
        var host = String(address[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.init(fileDescriptor: try Self.connectTCP(host: host, port: port, display: address))
    }

    private init(fileDescriptor: Int32) {
        self.fd = fileDescriptor
    }

    private static func connectTCP(host: String, port: UInt16, display: String) throws(ProtocolError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>? = nil
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw ProtocolError("cannot resolve \(display): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var reason = "no address"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            if fd < 0 { continue }
            if connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 {
                var one: Int32 = 1
                _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return fd
            }
            reason = String(cString: strerror(errno))
            close(fd)
        }
        throw ProtocolError("cannot connect to \(display): \(reason)")
    }

    /// Connects to the socket at `path`; throws with the OS error when nobody listens there.
    public init(path: String) throws(ProtocolError) {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ProtocolError("cannot create a socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw ProtocolError("socket path \(path) is longer than \(MemoryLayout.size(ofValue: address.sun_path) - 1) bytes")
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
            throw ProtocolError("cannot connect to \(path): \(reason) (is eddyd running with this --socket?)")
        }
        self.fd = fd
    }

    deinit {
        close(self.fd)
        self.readBuffer.deallocate()
    }

    /// How long one read may wait for the server's next bytes before `receive` throws (nil: no
    /// limit, the default: a subscription may be quiet for hours). For tools waiting for an
    /// answer from a socket that accepted and then says nothing.
    public func setReceiveTimeout(seconds: Int?) {
        var limit = timeval(tv_sec: seconds ?? 0, tv_usec: 0)
        _ = setsockopt(self.fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        self.receiveTimeoutSeconds = seconds
    }

    private var receiveTimeoutSeconds: Int?

    /// The error for a failed read: a timeout says so.
    private func readFailure() -> ProtocolError {
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK, let seconds = self.receiveTimeoutSeconds {
            return ProtocolError("no answer within \(seconds) s")
        }
        return ProtocolError("reading the socket failed: \(String(cString: strerror(code)))")
    }

    /// Ends the connection both ways: a `receive` blocked in another thread returns nil.
    public func shutdown() {
        _ = Glibc.shutdown(self.fd, Int32(SHUT_RDWR))
    }

    public func send(_ frame: Frame) throws(ProtocolError) {
        let bytes = frame.encoded()
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(self.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw ProtocolError("writing to the socket failed: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }

    /// The socket, for a caller that waits on many connections with poll or epoll and then
    /// calls `receiveReady` on the readable ones.
    public var fileDescriptor: Int32 { self.fd }

    /// Hands `body` every whole frame after one read of the socket; false when the server closed
    /// the connection. The read blocks while the socket holds nothing, so call it when poll or
    /// epoll reports the socket readable.
    public func receiveReady(_ body: (Frame) -> Void) throws(ProtocolError) -> Bool {
        let count = read(self.fd, self.readBuffer.baseAddress, self.readBuffer.count)
        if count == 0 { return false }
        guard count > 0 else { throw self.readFailure() }
        self.decoder.append(UnsafeRawBufferPointer(rebasing: self.readBuffer[..<count]))
        while let frame = try self.decoder.next() { body(frame) }
        return true
    }

    /// The next frame; nil when the server closed the connection.
    public func receive() throws(ProtocolError) -> Frame? {
        while true {
            if let frame = try self.decoder.next() { return frame }
            let count = read(self.fd, self.readBuffer.baseAddress, self.readBuffer.count)
            if count == 0 { return nil }
            guard count > 0 else { throw self.readFailure() }
            self.decoder.append(UnsafeRawBufferPointer(rebasing: self.readBuffer[..<count]))
        }
    }
}
