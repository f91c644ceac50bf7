import SidecarCrypto

/// Builds and signs id_tokens (RS256, header `{kid, alg}` without `typ`, as Apple does), and
/// spoils them on purpose when a fault is armed.
struct IDTokenMinter {
    let issuer: String
    let lifetime: Int64
    let keys: EmulatorKeyRing

    struct Context {
        var clientID: String
        var identity: GrantedIdentity
        var scopes: [String]
        var nonce: String?
        var authTime: Int64
        var accessToken: String?
        var code: String?
        /// `real_user_status` (0–2): Apple sends it on a native app's first sign-in only.
        var realUserStatus: Int? = nil
    }

    func claims(_ context: Context, now: Int64) -> [String: JSONValue] {
        var claims: [String: JSONValue] = [
            "iss": .string(issuer), "aud": .string(context.clientID), "iat": .integer(now),
            "exp": .integer(now + lifetime), "sub": .string(context.identity.subject),
            "auth_time": .integer(context.authTime), "nonce_supported": .bool(true),
        ]
        if context.scopes.contains("email") {
            claims["email"] = .string(context.identity.email)
            claims["email_verified"] = .bool(true)
            if context.identity.isPrivateEmail { claims["is_private_email"] = .bool(true) }
        }
        if let nonce = context.nonce { claims["nonce"] = .string(nonce) }
        if let accessToken = context.accessToken { claims["at_hash"] = .string(Self.halfHash(accessToken)) }
        if let code = context.code { claims["c_hash"] = .string(Self.halfHash(code)) }
        if let status = context.realUserStatus { claims["real_user_status"] = .integer(Int64(status)) }
        if let transferSubject = context.identity.transferSubject { claims["transfer_sub"] = .string(transferSubject) }
        return claims
    }

    /// The signed token, or nil for `noIDToken`. Faults that are not about the id_token are ignored.
    func mint(_ context: Context, now: Int64, fault: EmulatorFault? = nil) throws(CryptoError) -> String? {
        var claims = claims(context, now: now)
        switch fault {
        case .wrongIssuer?: claims["iss"] = .string("https://evil.example")
        case .wrongAudience?: claims["aud"] = .string(context.clientID + ".evil")
        case .expired?:
            claims["iat"] = .integer(now - lifetime - 7_200)
            claims["exp"] = .integer(now - 3_600)
            claims["auth_time"] = .integer(now - lifetime - 7_200)
        case .issuedInFuture?:
            claims["iat"] = .integer(now + 3_600)
            claims["exp"] = .integer(now + 3_600 + lifetime)
        case .nonceMissing?: claims["nonce"] = nil
        case .wrongNonce?: claims["nonce"] = .string("wrong-" + Base64URL.encode(try SecureRandom.bytes(16)))
        case .noIDToken?: return nil
        default: break
        }
        let (kid, key) = keys.current
        switch fault {
        case .algNone?:
            return Self.segment(["alg": .string("none"), "kid": .string(kid)]) + "." + Self.segment(claims) + "."
        case .hs256WithPublicKey?:
            // The classic key-confusion forgery: HMAC keyed with the public key's published form.
            let input = Self.segment(["alg": .string("HS256"), "kid": .string(kid)]) + "." + Self.segment(claims)
            let publicKey = JWKSet(keys: [kid: key.publicKey]).jsonText
            return input + "." + Base64URL.encode(HMACSHA256.authenticate(key: Array(publicKey.utf8), message: Array(input.utf8)))
        case .unknownKid?:
            return try JWTSigner.sign(claims: claims, keyID: "unknown-" + kid, key: .rs256(key))
        case .tamperedPayload?:
            let token = try JWTSigner.sign(claims: claims, keyID: kid, key: .rs256(key))
            var altered = claims
            altered["sub"] = .string("000000.00000000000000000000000000000000.0000")
            altered["email"] = .string("attacker@example.com")
            let parts = token.split(separator: ".", omittingEmptySubsequences: false)
            return parts[0] + "." + Self.segment(altered) + "." + parts[2]
        case .truncated?:
            return String(try JWTSigner.sign(claims: claims, keyID: kid, key: .rs256(key)).dropLast(8))
        case .extraSegment?:
            return try JWTSigner.sign(claims: claims, keyID: kid, key: .rs256(key)) + "." + Self.segment([:])
        default:
            return try JWTSigner.sign(claims: claims, keyID: kid, key: .rs256(key))
        }
    }

    /// Signs arbitrary claims with the current key (server-to-server notifications).
    func sign(_ claims: [String: JSONValue]) throws(CryptoError) -> String {
        let (kid, key) = keys.current
        return try JWTSigner.sign(claims: claims, keyID: kid, key: .rs256(key))
    }

    /// OpenID Connect `at_hash` / `c_hash`: base64url of the left half of SHA-256.
    static func halfHash(_ value: String) -> String {
        Base64URL.encode(SHA256.hash(Array(value.utf8)).prefix(16))
    }

    private static func segment(_ object: [String: JSONValue]) -> String {
        Base64URL.encode(Array(JSONValue.object(object).jsonText.utf8))
    }
}
