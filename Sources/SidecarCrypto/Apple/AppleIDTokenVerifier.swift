/// Verifies Apple identity tokens (and, with `verifyNotification`, server-to-server event JWTs).
///
/// RS256 only; key by `kid` from the JWKS; `iss` equal to the configured base URL; `aud` in the
/// allowed set; `exp` and `iat` with leeway (an `iat` beyond the leeway in the future is refused).
public struct AppleIDTokenVerifier: Sendable {
    public let issuer: String
    public let audiences: Set<String>
    public let leeway: Int64
    private let jws = JWSVerifier(allowedAlgorithms: [.rs256])

    /// - Parameters:
    ///   - issuer: `apple.base_url` (`https://appleid.apple.com` in production).
    ///   - audiences: the client_id for the web flow, `native_audiences` for apps.
    public init(issuer: String, audiences: Set<String>, leeway: Int64 = 60) {
        self.issuer = issuer
        self.audiences = audiences
        self.leeway = leeway
    }

    /// Verifies an id_token and extracts the identity.
    public func verify(_ token: String, keys: some JWSKeyResolver, now: Int64,
                       nonce expectation: NonceExpectation) throws(JWTError) -> AppleIdentity {
        let claims = try verifiedClaims(token, keys: keys, now: now)
        let nonce = try checkNonce(claims, expectation)
        let subject = try claims.requiredString("sub")
        guard !subject.isEmpty else { throw .invalidClaim("sub") }
        let email = claims.string("email").flatMap { $0.isEmpty ? nil : $0 }
        let realUserStatus = try claims["real_user_status"].map { value throws(JWTError) in
            guard let status = value.integerValue, (0...2).contains(status) else { throw .invalidClaim("real_user_status") }
            return Int(status)
        }
        let transferSubject = claims.string("transfer_sub").flatMap { $0.isEmpty ? nil : $0 }
        return AppleIdentity(
            subject: subject,
            audience: try claims.audiences().first(where: audiences.contains) ?? "",
            email: email,
            emailVerified: try claims.optionalBool("email_verified") ?? false,
            isPrivateEmail: try claims.optionalBool("is_private_email") ?? false,
            realUserStatus: realUserStatus,
            authTime: claims.integer("auth_time"),
            issuedAt: try claims.requiredInteger("iat"),
            expiresAt: try claims.requiredInteger("exp"),
            nonce: nonce, transferSubject: transferSubject)
    }

    /// Signature, issuer, audience and time checks shared by id_tokens and notifications.
    func verifiedClaims(_ token: String, keys: some JWSKeyResolver, now: Int64) throws(JWTError) -> JWTClaims {
        let claims = try jws.verify(token, keys: keys).claims
        try claims.validateIssuer(issuer)
        try claims.validateAudience(in: audiences)
        try claims.validateTimes(now: now, leeway: leeway)
        return claims
    }

    private func checkNonce(_ claims: JWTClaims, _ expectation: NonceExpectation) throws(JWTError) -> String? {
        let nonce: String?
        switch claims["nonce"] {
        case nil: nonce = nil
        case .string(let value)?: nonce = value
        default: throw .invalidClaim("nonce")
        }
        guard case .oneOf(let expected) = expectation else { return nonce }
        guard let nonce else { throw .nonceMissing }
        // Check every candidate so timing does not reveal which one matched.
        var matched = false
        for candidate in expected where ConstantTime.equals(candidate.utf8, nonce.utf8) { matched = true }
        guard matched else { throw .nonceMismatch }
        return nonce
    }
}
