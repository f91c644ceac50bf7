import SidecarCrypto

/// Checks a `client_secret` the way Apple does: an ES256 JWT whose `kid` names a registered
/// key and whose signature (raw r‖s) verifies with it, `iss` = team id, `aud` = our issuer,
/// `sub` = the client_id of the request (case-sensitive), `iat` not in the future, `exp` in
/// the future and at most 15,777,000 s after `iat`.
struct ClientSecretVerifier {
    let teamID: String
    let audience: String
    let keys: [String: P256PublicKey]
    let leeway: Int64

    /// Why a secret was refused (logged by the emulator, never the secret itself).
    enum Refusal: Error, Equatable {
        case token(JWTError)
        case wrongIssuer, wrongAudience, wrongSubject, issuedInFuture, expired, lifetimeTooLong
    }

    private struct KeyResolver: JWSKeyResolver {
        let keys: [String: P256PublicKey]
        func verificationKey(forKeyID keyID: String) -> JWSVerificationKey? { keys[keyID].map { .p256($0) } }
    }

    /// The same checks for a secret issued by `team` (a client moved to another team).
    func forTeam(_ team: String) -> ClientSecretVerifier {
        ClientSecretVerifier(teamID: team, audience: audience, keys: keys, leeway: leeway)
    }

    func verify(_ secret: String, clientID: String, now: Int64) throws(Refusal) {
        let claims: JWTClaims
        do {
            claims = try JWSVerifier(allowedAlgorithms: [.es256], maximumByteCount: 4_096)
                .verify(secret, keys: KeyResolver(keys: keys)).claims
        } catch { throw .token(error) }
        guard claims.string("iss") == teamID else { throw .wrongIssuer }
        guard claims.string("aud") == audience else { throw .wrongAudience }
        guard claims.string("sub") == clientID else { throw .wrongSubject }
        guard let issuedAt = claims["iat"].flatMap(Self.integer), let expiresAt = claims["exp"].flatMap(Self.integer)
        else { throw .token(.missingClaim("iat/exp")) }
        guard issuedAt <= now + leeway else { throw .issuedInFuture }
        guard expiresAt > now else { throw .expired }
        guard expiresAt - issuedAt <= AppleClientSecret.maximumLifetime else { throw .lifetimeTooLong }
    }

    /// A JSON integer (not a string, not a fraction).
    private static func integer(_ value: JSONValue) -> Int64? {
        if case .integer(let v) = value { return v }
        return nil
    }
}
