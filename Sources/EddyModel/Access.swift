// Who an operation acts for, as the security-rules checks see it:
// - `Access.admin` bypasses the rules (the admin secret, or `Bearer owner` in emulator mode).
// - `Access.client(auth:)` is checked against the rules with `auth` (`.null` when the caller sent
//   no credential; a map of the verified token's claims otherwise).

public struct Access: Sendable {
    /// True for the admin: no rule applies.
    public let isAdmin: Bool
    /// Rules' `auth`: `.null` (unauthenticated) or a map with `uid`, `provider`, `token`.
    public let auth: RuleValue

    public static let admin = Access(isAdmin: true, auth: .null)
    public static let unauthenticated = Access(isAdmin: false, auth: .null)

    public static func client(auth: RuleValue) -> Access { Access(isAdmin: false, auth: auth) }
}
