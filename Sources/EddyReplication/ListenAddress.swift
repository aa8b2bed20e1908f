// Where a daemon listener binds (the replication log server, the native protocol): a Unix
// socket (mode 0660, a stale file from a crash replaced) or TCP (address reuse, and no Nagle
// delay on accepted connections: both protocols are request/answer). `LogServerService.Address`
// and the native listener share it.

import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

extension LogServerService.Address {
    /// Binds `bootstrap` here; the channel of the listening socket.
    public func bind(_ bootstrap: ServerBootstrap) async throws -> any Channel {
        switch self {
        case .unix(let path):
            let server = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
            chmod(path, 0o660)
            return server
        case .tcp(let host, let port):
            return try await bootstrap
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .bind(host: host, port: port).get()
        }
    }
}
