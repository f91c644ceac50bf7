/// Signs the identity assertion: an ES256 JWT with header
/// `{alg: ES256, kid, typ: JWT}` and claims `iss`, `aud`, `sub`, `email`, `email_verified`,
/// `is_private_email`, `name`, `sid`, `session_issued_at`, `jti`, `iat`, `exp`, and what the
/// session kept of the id_token: `auth_time`, `real_user_status`, `transfer_sub`,
/// `previous_user_id`. Absent values are left out rather than sent as null. Immutable and shared by every worker; `AssertionCache` keeps what it
/// signs so that a session is signed once per `ttl`, not once per request.
public final class AssertionSigner: Sendable {
    public let key: AssertionKey
    public let issuer: String
    public let audience: String
    /// `assertion.ttl` in seconds.
    public let ttl: Int64

    public init(key: AssertionKey, issuer: String, audience: String, ttl: Int64) {
        self.key = key
        self.issuer = issuer
        self.audience = audience
        self.ttl = max(1, ttl)
    }

    /// An assertion for `session` issued at `now`. Its `exp` never passes the session's
    /// absolute expiry: the assertion must not outlive what it asserts.
    public func sign(_ session: Session, now: Int64) throws(CryptoError) -> SignedAssertion {
        let expiresAt = max(now + 1, min(now + ttl, session.expiresAt))
        var claims: [String: JSONValue] = [
            "iss": .string(issuer), "aud": .string(audience), "sub": .string(session.subject),
            "email_verified": .bool(session.emailVerified), "sid": .string(Base64URL.encode(session.id)),
            "jti": .string(Base64URL.encode(try SecureRandom.bytes(16))),
            "iat": .integer(now), "exp": .integer(expiresAt),
        ]
        if let email = session.email { claims["email"] = .string(email) }
        if let name = session.name, !name.isEmpty { claims["name"] = .string(name) }
        claims["is_private_email"] = .bool(session.privateEmail)
        claims["session_issued_at"] = .integer(session.issuedAt)
        let extras = session.extras
        if let authTime = extras.authTime { claims["auth_time"] = .integer(authTime) }
        if let status = extras.realUserStatus { claims["real_user_status"] = .integer(Int64(status)) }
        if let transferSubject = extras.transferSubject { claims["transfer_sub"] = .string(transferSubject) }
        if let previousUserID = extras.previousUserID { claims["previous_user_id"] = .string(previousUserID) }
        let token = try JWTSigner.sign(
            claims: claims, keyID: key.keyID, key: .es256(key.privateKey), extraHeader: ["typ": .string("JWT")])
        return SignedAssertion(
            token: Array(token.utf8), sessionID: session.id, issuedAt: now, expiresAt: expiresAt,
            // Renewed once three quarters of its life are gone, so an upstream never gets one
            // with less than a quarter of `ttl` left (network and clock-skew headroom).
            renewAt: now + max(1, (expiresAt - now) * 3 / 4))
    }
}

/// One signed assertion and when to stop handing it out.
public struct SignedAssertion: Sendable {
    /// The compact JWT (ASCII: base64url and dots, safe as a header value).
    public let token: [UInt8]
    public let sessionID: [UInt8]
    public let issuedAt: Int64
    public let expiresAt: Int64
    /// From this time on a request gets a freshly signed assertion.
    public let renewAt: Int64
}
