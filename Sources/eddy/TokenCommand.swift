// `eddy token`: mints an HS256 ID token for an operator, signed with the secret eddyd verifies
// (`--jwt-secret-file`), with Firebase's claims (`sub` = uid, `aud` = project id,
// `iss` = https://securetoken.google.com/<project id>, `iat`, `exp`) plus any custom claims,
// which rules see as `auth.token.<name>`. Prints the token on stdout.

import ArgumentParser
import EddyModel
import Foundation
import JWTKit

struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Mint an HS256 ID token for a uid (verified by eddyd --jwt-secret-file).")

    @Option(name: .customLong("uid"), help: "The user id: the token's sub, rules' auth.uid.")
    var uid: String

    @Option(name: .customLong("secret-file"), help: "File holding the HS256 secret (the same file as eddyd --jwt-secret-file).")
    var secretFile: String

    @Option(name: .customLong("project-id"), help: "The project id (aud) eddyd expects (--project-id). Default: eddy")
    var projectID = "eddy"

    @Option(name: .customLong("claims"), help: "Custom claims as a JSON object, e.g. '{\"admin\": true}' (auth.token.admin). Default: none")
    var claims: String?

    @Option(name: .customLong("expires-in"), help: "Seconds until the token expires (1 to 2592000). Default: 3600")
    var expiresInSeconds = 3600

    func run() async throws {
        do {
            let secret: String
            do {
                secret = try String(contentsOfFile: self.secretFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            } catch {
                throw EddyError(.invalidArgument, "--secret-file \(self.secretFile) cannot be read as text: \(Self.reason(error))")
            }
            guard secret.utf8.count >= 32 else { throw EddyError(.invalidArgument, "--secret-file \(self.secretFile) holds fewer than 32 bytes (HS256 needs at least 32)") }
            guard !self.uid.isEmpty, self.uid.utf8.count <= 128 else { throw EddyError(.invalidArgument, "--uid must be 1 to 128 bytes") }
            guard (1...2_592_000).contains(self.expiresInSeconds) else {
                throw EddyError(.invalidArgument, "--expires-in \(self.expiresInSeconds) is out of range 1...2592000 (seconds)")
            }
            var members: [String: Value] = [:]
            if let claims {
                guard case .object(let custom) = try JSONParser.parse(Array(claims.utf8)) else {
                    throw EddyError(.invalidArgument, "--claims must be a JSON object")
                }
                members = custom
            }
            let now = Date().timeIntervalSince1970.rounded(.down)
            members["sub"] = .string(self.uid)
            members["user_id"] = .string(self.uid)
            members["aud"] = .string(self.projectID)
            members["iss"] = .string("https://securetoken.google.com/\(self.projectID)")
            members["iat"] = .number(now)
            members["exp"] = .number(now + Double(self.expiresInSeconds))
            let keys = JWTKeyCollection()
            await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: "eddy-hs256")
            let token = try await keys.sign(MintedClaims(claims: .object(members)), kid: "eddy-hs256")
            printLine(token)
        } catch let error as EddyError {
            FileHandle.standardError.write(Data("eddy: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }
}

extension TokenCommand {
    /// What went wrong reading a file, in the OS's words where there are some.
    static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        if nsError.domain == NSCocoaErrorDomain {
            switch nsError.code {
            case NSFileReadNoSuchFileError: return "no such file"
            case NSFileReadNoPermissionError: return "permission denied"
            case NSFileReadInapplicableStringEncodingError: return "not UTF-8 text"
            default: break
            }
        }
        return nsError.localizedDescription
    }
}

/// Arbitrary claims, encoded as the JSON they are.
struct MintedClaims: JWTPayload {
    var claims: Value

    init(claims: Value) { self.claims = claims }

    init(from decoder: any Decoder) throws {
        throw EddyError(.unsupported, "minted claims are only encoded")
    }

    func encode(to encoder: any Encoder) throws {
        try EncodableValue(self.claims).encode(to: encoder)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

struct EncodableValue: Encodable {
    let value: Value

    init(_ value: Value) { self.value = value }

    func encode(to encoder: any Encoder) throws {
        switch self.value {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let b):
            var container = encoder.singleValueContainer()
            try container.encode(b)
        case .number(let n):
            var container = encoder.singleValueContainer()
            if n == n.rounded(), abs(n) < 9e15 { try container.encode(Int64(n)) } else { try container.encode(n) }
        case .wideInteger(let n):
            var container = encoder.singleValueContainer()
            try container.encode(n)
        case .string(let s):
            var container = encoder.singleValueContainer()
            try container.encode(s)
        case .object(let children):
            var container = encoder.container(keyedBy: ClaimKey.self)
            for (key, child) in children { try container.encode(EncodableValue(child), forKey: ClaimKey(key)) }
        }
    }
}

struct ClaimKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { self.stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
