// The server side of TLS: a context from a server configuration (`ServerCertificate` holds the
// reloadable pair eddyd presents on its TCP listeners: HTTP, `--native-listen`,
// `--replication-listen`). Unix sockets stay plain (their file mode protects them).

import EddyModel
import NIOSSL

public enum ServerTLS {
    public static func context(_ configuration: TLSConfiguration) throws(EddyError) -> NIOSSLContext {
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw EddyError(.invalidArgument, "the TLS certificate and key do not make a TLS context (do they belong together?): \(error)")
        }
    }
}
