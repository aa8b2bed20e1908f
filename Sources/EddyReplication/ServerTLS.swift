// The server side of TLS: the certificate chain and private key eddyd presents on its TCP
// listeners (HTTP, `--native-listen`, `--replication-listen`) when `--tls-cert-file` and
// `--tls-key-file` are configured. Unix sockets stay plain (their file mode protects them).
// TLS 1.2 at least. A file that cannot be read or parsed stops the start with its path.

import EddyModel
import NIOSSL

public enum ServerTLS {
    public static func configuration(certificateFile: String, keyFile: String) throws(EddyError) -> TLSConfiguration {
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificateFile)
        } catch {
            throw EddyError(.invalidArgument, "--tls-cert-file \(certificateFile) is not a readable PEM certificate chain: \(error)")
        }
        guard !chain.isEmpty else { throw EddyError(.invalidArgument, "--tls-cert-file \(certificateFile) holds no certificate") }
        do {
            key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
        } catch {
            throw EddyError(.invalidArgument, "--tls-key-file \(keyFile) is not a readable PEM private key: \(error)")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }

    public static func context(_ configuration: TLSConfiguration) throws(EddyError) -> NIOSSLContext {
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw EddyError(.invalidArgument, "the TLS certificate and key do not make a TLS context (do they belong together?): \(error)")
        }
    }
}
