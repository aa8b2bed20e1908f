// The certificate chain and private key eddyd presents on its TCP listeners, reloadable: every
// TLS handshake takes the pair in force at that moment (NIOSSL's context callback overrides the
// context's own pair per handshake), so `reload()` (SIGHUP) puts a renewed certificate in use
// for new connections while open ones carry on with theirs. A pair that does not load or does
// not belong together is refused and the one in force stays.

import EddyModel
import NIOCore
import NIOSSL
import Synchronization

public final class ServerCertificate: Sendable {
    private struct Pair: Sendable {
        var chain: [NIOSSLCertificate]
        var key: NIOSSLPrivateKey
    }

    public let certificateFile: String
    public let keyFile: String
    private let pair: Mutex<Pair>

    /// Loads the pair; throws naming the file that cannot be read or parsed.
    public init(certificateFile: String, keyFile: String) throws(EddyError) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.pair = Mutex(try Self.load(certificateFile: certificateFile, keyFile: keyFile))
    }

    /// The server configuration for every TCP listener (TLS 1.2 at least): its pair is the one
    /// in force at each handshake.
    public var configuration: TLSConfiguration {
        let pair = self.pair.withLock { $0 }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: pair.chain.map { .certificate($0) }, privateKey: .privateKey(pair.key))
        configuration.minimumTLSVersion = .tlsv12
        configuration.sslContextCallback = { [self] _, promise in
            let pair = self.pair.withLock { $0 }
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = pair.chain.map { .certificate($0) }
            override.privateKey = .privateKey(pair.key)
            promise.succeed(override)
        }
        return configuration
    }

    /// Rereads both files; the new pair is used from the next handshake on.
    public func reload() throws(EddyError) {
        let pair = try Self.load(certificateFile: self.certificateFile, keyFile: self.keyFile)
        self.pair.withLock { $0 = pair }
    }

    private static func load(certificateFile: String, keyFile: String) throws(EddyError) -> Pair {
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
        // A context checks that the key belongs to the certificate.
        var check = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        check.minimumTLSVersion = .tlsv12
        _ = try ServerTLS.context(check)
        return Pair(chain: chain, key: key)
    }
}
