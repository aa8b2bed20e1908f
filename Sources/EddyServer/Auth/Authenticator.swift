// Turns a request's credential into the `Access` the engine checks rules with.
//
// Credentials (HTTP `Authorization: Bearer <c>`, `?auth=<c>` or `?access_token=<c>`; the native
// protocol's `auth` request):
// - the admin secret (`--admin-token-file`), compared in constant time: the admin, no rules;
// - `owner`, only with the Firebase emulator conventions (no admin secret, loopback listeners):
//   the admin, as the Firebase emulator treats it;
// - otherwise a Firebase ID token (JWT): RS256 against the keys of `--jwt-keys-file` (Firebase's
//   published x509 map `{kid: PEM}` or a JWKS), or HS256 with `--jwt-secret-file` (tokens an
//   operator mints with `eddy token`). `exp`, `iat`, `aud` (the project id), `iss`
//   (`https://securetoken.google.com/<project id>`) and `sub` are checked; the claims become
//   rules' `auth` (`auth.uid` = `sub`, `auth.token` = every claim, `auth.provider`).
// - no credential: unauthenticated (`auth` is null).
// In the emulator conventions with no token keys configured, an ID token's claims are read
// without checking its signature (the Firebase emulator accepts the Auth emulator's unsigned
// tokens the same way; `exp`, `aud`, `iss` are not checked), and a credential that is not a JWT
// is ignored, as it was before authentication existed: nothing is protected in that mode
// anyway (`owner` is the admin).
// `auth_variable_override=<json>` (admin only) evaluates rules as that `auth`.
//
// SIGHUP rereads the secret and key files (`reload`): rotation without a restart.
//
// Verified tokens are cached (by their text, until they expire; at most `cacheCountMax`), so a
// client that sends the same token with every request pays for its signature once.

import EddyEngine
import EddyModel
import Foundation
import JWTKit
import Synchronization

public final class Authenticator: Sendable {
    public struct Configuration: Sendable {
        /// The admin secret (file contents, trimmed); nil: none configured.
        public var adminSecret: String?
        /// HS256 secret for operator-issued tokens; nil: HS256 tokens are refused.
        public var hmacSecret: String?
        /// RS256 keys: the text of Firebase's x509 map `{kid: PEM}` or of a JWKS.
        public var rsaKeysJSON: String?
        /// `aud` every token must carry; `iss` must be `https://securetoken.google.com/<it>`.
        public var projectID = "eddy"
        /// Firebase emulator conventions: `Bearer owner` is the admin.
        public var emulatorConventions = true

        public init() {}

        /// True when tokens or an admin secret are configured (the database is not open by default).
        public var isConfigured: Bool { self.adminSecret != nil || self.hmacSecret != nil || self.rsaKeysJSON != nil }
    }

    /// Who the request acts for, and until when (the token's expiry; nil: no expiry).
    public struct Identity: Sendable {
        public var access: Access
        public var expires: Date?
    }

    /// The secrets and keys in force; replaced whole by `reload` (SIGHUP).
    private struct Loaded: Sendable {
        var configuration: Configuration
        var keys: JWTKeyCollection
    }

    private let loaded: Mutex<Loaded>
    private let cache = Mutex<[String: Identity]>([:])
    /// Called after every reload: open streams and native connections check that the
    /// credential they were opened with still verifies (`onReload`).
    private let reloadObservers = Mutex<(next: UInt64, observers: [UInt64: @Sendable () -> Void])>((0, [:]))
    static let cacheCountMax = 10_000

    var configuration: Configuration { self.loaded.withLock { $0.configuration } }
    /// Whether tokens or an admin secret are configured; fixed for the process (`reload` keeps it).
    let isConfigured: Bool
    private var keys: JWTKeyCollection { self.loaded.withLock { $0.keys } }

    /// The Firebase emulator's conventions and no keys: `owner` is the admin, nobody else is
    /// authenticated.
    public static let emulator = Authenticator(configuration: Configuration(), keys: JWTKeyCollection())

    private init(configuration: Configuration, keys: JWTKeyCollection) {
        self.loaded = Mutex(Loaded(configuration: configuration, keys: keys))
        self.isConfigured = configuration.isConfigured
    }

    /// Builds the key collection; throws a message naming the bad key file content.
    public static func make(_ configuration: Configuration) async throws(EddyError) -> Authenticator {
        Authenticator(configuration: configuration, keys: try await Self.keys(configuration))
    }

    /// Replaces the secrets and keys (a rotation: a new admin secret, Firebase's next public
    /// keys), dropping every cached verification. Then every observer (`onReload`) checks its
    /// credential again: an event stream or native connection whose credential no longer
    /// verifies is revoked (`auth_revoked`), as Firebase revokes a stream whose auth "is no
    /// longer valid". Refused, changing nothing, when it would change whether credentials are
    /// configured (that changes the default rules: a restart).
    public func reload(_ configuration: Configuration) async throws(EddyError) {
        guard configuration.isConfigured == self.isConfigured else {
            throw EddyError(
                .invalidArgument,
                "credentials would go from \(self.isConfigured ? "configured" : "none") to \(configuration.isConfigured ? "configured" : "none"); that needs a restart")
        }
        let keys = try await Self.keys(configuration)
        self.loaded.withLock { $0 = Loaded(configuration: configuration, keys: keys) }
        self.cache.withLock { $0.removeAll() }
        for observer in self.reloadObservers.withLock({ Array($0.observers.values) }) { observer() }
    }

    /// Calls `observer` after each reload until `removeReloadObserver` with the id returned.
    public func onReload(_ observer: @escaping @Sendable () -> Void) -> UInt64 {
        self.reloadObservers.withLock { state in
            state.next += 1
            state.observers[state.next] = observer
            return state.next
        }
    }

    public func removeReloadObserver(_ id: UInt64) {
        _ = self.reloadObservers.withLock { $0.observers.removeValue(forKey: id) }
    }

    /// Whether `credential` (with `override`) still identifies someone under the keys now in
    /// force: false when it no longer verifies (a rotated secret, a removed key, expiry).
    public func stillValid(credential: String?, override: String?) async -> Bool {
        (try? await self.identify(credential: credential, override: override)) != nil
    }

    private static func keys(_ configuration: Configuration) async throws(EddyError) -> JWTKeyCollection {
        let keys = JWTKeyCollection()
        if let secret = configuration.hmacSecret {
            await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: "eddy-hs256")
        }
        if let json = configuration.rsaKeysJSON {
            do {
                try await Self.addRSAKeys(json, to: keys)
            } catch {
                throw EddyError(.invalidArgument, "jwt-keys-file: \(error)")
            }
        }
        return keys
    }

    private static func addRSAKeys(_ json: String, to keys: JWTKeyCollection) async throws {
        guard case .object(let members) = try JSONParser.parse(Array(json.utf8)) else {
            throw EddyError(.invalidArgument, "expected a JSON object: {kid: PEM certificate} or a JWKS {\"keys\": [...]}")
        }
        if members["keys"] != nil {
            try await keys.add(jwksJSON: json)
            return
        }
        for (kid, pem) in members {
            guard case .string(let text) = pem else { throw EddyError(.invalidArgument, "key \(kid) is not a PEM string") }
            let key =
                text.contains("BEGIN CERTIFICATE")
                ? try Insecure.RSA.PublicKey(certificatePEM: text) : try Insecure.RSA.PublicKey(pem: text)
            await keys.add(rsa: key, digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
        }
    }

    /// The identity of a request. `credential`: the bearer token or `auth=` value (nil: none);
    /// `override`: the raw `auth_variable_override` JSON.
    public func identify(credential: String?, override: String?) async throws(EddyError) -> Identity {
        if let known = try self.identifyWithoutVerifying(credential: credential, override: override) { return known }
        return try self.applying(override, to: try await self.identify(credential))
    }

    /// The identity when it needs no signature check (no credential, the admin, `owner`, a token
    /// verified before): synchronous, so the common request pays no executor hop. Nil when a
    /// token must be verified (`identify`).
    public func identifyWithoutVerifying(credential: String?, override: String?) throws(EddyError) -> Identity? {
        guard let identity = self.known(credential) else { return nil }
        return try self.applying(override, to: identity)
    }

    private func known(_ credential: String?) -> Identity? {
        guard let credential, !credential.isEmpty else { return Identity(access: .unauthenticated, expires: nil) }
        let configuration = self.configuration
        if let secret = configuration.adminSecret {
            if ConstantTime.equal(credential, secret) { return Identity(access: .admin, expires: nil) }
        } else if configuration.emulatorConventions, credential == "owner" {
            return Identity(access: .admin, expires: nil)
        }
        let now = Date()
        if let cached = self.cache.withLock({ $0[credential] }), cached.expires.map({ $0 > now }) ?? true { return cached }
        return nil
    }

    private func applying(_ override: String?, to identity: Identity) throws(EddyError) -> Identity {
        var identity = identity
        if let override {
            guard identity.access.isAdmin else {
                throw EddyError(.permissionDenied, "auth_variable_override is only allowed with the admin credential")
            }
            let auth: Value
            do {
                auth = try JSONParser.parse(Array(override.utf8))
            } catch {
                throw EddyError(.invalidArgument, "auth_variable_override is not valid JSON: \(error.message)")
            }
            identity = Identity(access: auth.isNull ? .unauthenticated : .client(auth: RuleValue(auth)), expires: nil)
        }
        return identity
    }

    private func identify(_ credential: String?) async throws(EddyError) -> Identity {
        if let known = self.known(credential) { return known }
        guard let credential else { return Identity(access: .unauthenticated, expires: nil) }
        let now = Date()
        let identity = try await self.verify(credential, now: now)
        self.cache.withLock { cache in
            if cache.count >= Self.cacheCountMax {
                cache = cache.filter { $0.value.expires.map { $0 > now } ?? true }
                if cache.count >= Self.cacheCountMax { cache.removeAll(keepingCapacity: true) }
            }
            cache[credential] = identity
        }
        return identity
    }

    /// The verified claims of an ID token, as rules' `auth`.
    private func verify(_ token: String, now: Date) async throws(EddyError) -> Identity {
        let configuration = self.configuration
        guard configuration.hmacSecret != nil || configuration.rsaKeysJSON != nil else {
            guard configuration.emulatorConventions else {
                throw EddyError(.unauthenticated, "Could not parse auth token: no token keys are configured (--jwt-secret-file, --jwt-keys-file)")
            }
            return Self.unverified(token)
        }
        do {
            _ = try await self.keys.verify(token, as: IDTokenClaims.self)
        } catch let error as JWTError where error.errorType == .claimVerificationFailure {
            throw EddyError(.unauthenticated, "Auth token is expired")
        } catch {
            throw EddyError(.unauthenticated, "Could not parse auth token: the signature does not verify or the token is malformed")
        }
        // The signature holds: read every claim of the payload.
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Self.base64URLDecode(parts[1]), case .object(let claims) = try? JSONParser.parse(payload) else {
            throw EddyError(.unauthenticated, "Could not parse auth token: the payload is not a JSON object")
        }
        let project = configuration.projectID
        guard case .number(let exp)? = claims["exp"], Date(timeIntervalSince1970: exp) > now else {
            throw EddyError(.unauthenticated, "Auth token is expired")
        }
        guard case .number(let iat)? = claims["iat"], iat <= now.timeIntervalSince1970 + 300 else {
            throw EddyError(.unauthenticated, "Could not parse auth token: iat is missing or in the future")
        }
        let audiences: [Value]
        switch claims["aud"] {
        case .string?: audiences = [claims["aud"]!]
        case .object(let list)?: audiences = Array(list.values)
        default: audiences = []
        }
        guard audiences.contains(.string(project)) else {
            throw EddyError(.unauthenticated, "Could not parse auth token: aud is not the project id \"\(project)\" (--project-id)")
        }
        guard claims["iss"] == .string("https://securetoken.google.com/\(project)") else {
            throw EddyError(.unauthenticated, "Could not parse auth token: iss is not https://securetoken.google.com/\(project)")
        }
        guard case .string(let sub)? = claims["sub"], !sub.isEmpty, sub.utf8.count <= 128 else {
            throw EddyError(.unauthenticated, "Could not parse auth token: sub (the uid) is missing, empty or longer than 128 bytes")
        }
        let auth: RuleValue = .map(["uid": .string(sub), "provider": Self.provider(claims), "token": RuleValue(.object(claims))])
        return Identity(access: .client(auth: auth), expires: Date(timeIntervalSince1970: exp))
    }

    /// `auth.provider`: the token's `firebase.sign_in_provider` in the names Firebase's rules
    /// reference lists ("password", "anonymous", "facebook", "github", "google", "twitter"):
    /// the four identity providers' domains lose their `.com`; any other name is kept as sent;
    /// no sign-in provider is `custom`.
    static func provider(_ claims: [String: Value]) -> RuleValue {
        guard case .object(let firebase)? = claims["firebase"], case .string(let name)? = firebase["sign_in_provider"] else {
            return .string("custom")
        }
        return .string(Self.rulesProviderNames[name] ?? name)
    }

    /// Sign-in provider ids as ID tokens carry them -> as `auth.provider` names them.
    static let rulesProviderNames = ["google.com": "google", "facebook.com": "facebook", "github.com": "github", "twitter.com": "twitter"]

    /// Emulator mode: the claims of a JWT as they are (unauthenticated when it is not one).
    static func unverified(_ token: String) -> Identity {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = self.base64URLDecode(parts[1]), case .object(let claims) = try? JSONParser.parse(payload),
            case .string(let sub)? = claims["sub"] ?? claims["user_id"]
        else { return Identity(access: .unauthenticated, expires: nil) }
        let auth: RuleValue = .map(["uid": .string(sub), "provider": Self.provider(claims), "token": RuleValue(.object(claims))])
        return Identity(access: .client(auth: auth), expires: nil)
    }

    static func base64URLDecode(_ text: Substring) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map { Array($0) }
    }
}

/// The claims jwt-kit checks while verifying the signature (the rest are checked above, with
/// Firebase's messages).
struct IDTokenClaims: JWTPayload {
    var exp: ExpirationClaim

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try self.exp.verifyNotExpired()
    }
}
