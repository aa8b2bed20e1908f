// A blocking client of the native protocol for tools (`eddy watch`, benchmarks): connects to
// the daemon's Unix socket, sends frames, reads frames. At most one thread sends and one thread
// receives at a time (the socket allows both at once); not for servers.

import Glibc

public final class NativeClient: @unchecked Sendable {
    // @unchecked: `fd` is immutable; `decoder` and `readBuffer` are only used by the receiving
    // thread.
    private let fd: Int32
    private var decoder = FrameDecoder()
    /// Where `receive` reads the socket into, allocated once.
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)

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

    /// The next frame; nil when the server closed the connection.
    public func receive() throws(ProtocolError) -> Frame? {
        while true {
            if let frame = try self.decoder.next() { return frame }
            let count = read(self.fd, self.readBuffer.baseAddress, self.readBuffer.count)
            if count == 0 { return nil }
            guard count > 0 else { throw ProtocolError("reading the socket failed: \(String(cString: strerror(errno)))") }
            self.decoder.append(UnsafeRawBufferPointer(rebasing: self.readBuffer[..<count]))
        }
    }
}
