// Whether the server at an `http://host:port` URL (or `useEmulator`'s host and port) speaks
// Eddy's native protocol on that port, as eddyd's HTTP listener does (its first byte tells a
// native frame from an HTTP request). The client then takes the native protocol there: one
// ordered connection, as Firebase's SDKs keep one, instead of REST and SSE.
//
// The probe is one `auth` request without a credential (no effect on the server), answered
// by a native frame, within `timeoutMilliseconds` for the connect and as much for the answer.
// Anything else (an HTTP answer, a closed connection, no server yet, a timeout) keeps the REST
// and SSE fallback: only a server known to speak the native protocol gets it. It runs once,
// when an instance is made, blocking the caller for a round trip, and only for IP addresses
// and `localhost` (no DNS lookup, which could wait for seconds).

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import EddyModel
import EddyProtocol

enum NativeProbe {
    static let timeoutMilliseconds: Int32 = 1000

    /// True when a native frame answers a native request at host:port. Only IP addresses and
    /// `localhost` are probed (where emulators run): a host name would wait for DNS, which has
    /// no timeout here, and Firebase-API code makes instances of made-up URLs just to read them.
    static func speaksNative(host: String, port: Int) -> Bool {
        let bareHost = Self.withoutBrackets(host)
        guard self.isAddressOrLocalhost(bareHost) else { return false }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(bareHost, String(port), &hints, &found) == 0 else { return false }
        defer { freeaddrinfo(found) }
        var candidate = found
        while let address = candidate {
            if let answer = self.probe(address.pointee) { return answer }
            candidate = address.pointee.ai_next
        }
        return false
    }

    /// An IPv6 address as URLs write it (`[::1]`) as the socket calls take it.
    static func withoutBrackets(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    static func isAddressOrLocalhost(_ host: String) -> Bool {
        let bare = Self.withoutBrackets(host)
        if bare.lowercased() == "localhost" { return true }
        var address = in6_addr()
        return inet_pton(AF_INET, bare, &address) == 1 || inet_pton(AF_INET6, bare, &address) == 1
    }

    /// nil: could not connect to this address (try the next); otherwise whether it answered natively.
    private static func probe(_ address: addrinfo) -> Bool? {
        let fd = socket(address.ai_family, address.ai_socktype, address.ai_protocol)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        if connect(fd, address.ai_addr, address.ai_addrlen) != 0 {
            guard errno == EINPROGRESS, self.wait(fd, for: Int16(POLLOUT)) else { return nil }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0 else { return nil }
        }
        let request = Frame(kind: .auth, requestID: 1, payload: JSONWriter.bytes(.object(["token": .null]))).encoded()
        let sent = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == request.count else { return false }
        // A frame: u32be length (top byte 0 for any answer), then the version byte.
        var head = [UInt8](repeating: 0, count: 5)
        var have = 0
        while have < head.count {
            guard self.wait(fd, for: Int16(POLLIN)) else { return false }
            let got = head.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + have, $0.count - have, 0) }
            if got < 0, errno == EAGAIN || errno == EINTR { continue }
            guard got > 0 else { return false }
            have += got
        }
        return head[0] == 0 && head[4] == Frame.version
    }

    private static func wait(_ fd: Int32, for events: Int16) -> Bool {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        while true {
            let ready = poll(&entry, 1, self.timeoutMilliseconds)
            if ready < 0, errno == EINTR { continue }
            return ready > 0 && entry.revents & events != 0
        }
    }
}
