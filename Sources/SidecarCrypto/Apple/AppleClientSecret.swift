import Synchronization

/// The ES256 client-secret JWT that authenticates the relying party at Apple's token endpoint.
public enum AppleClientSecret {
    /// Apple's limit on `exp − iat`.
    public static let maximumLifetime: Int64 = 15_777_000

    public enum Error: Swift.Error, Equatable, Sendable {
        case lifetimeOutOfRange
        case signing(CryptoError)
    }

    /// Mints `{alg: ES256, kid: keyID}` / `{iss: teamID, iat, exp: iat + lifetime, aud: audience, sub: clientID}`.
    /// - Parameter audience: Apple's base URL (`https://appleid.apple.com`).
    public static func mint(teamID: String, clientID: String, keyID: String, key: P256PrivateKey,
                            audience: String, issuedAt: Int64, lifetime: Int64) throws(Error) -> String {
        guard lifetime > 0, lifetime <= maximumLifetime else { throw .lifetimeOutOfRange }
        let claims: [String: JSONValue] = [
            "iss": .string(teamID), "iat": .integer(issuedAt), "exp": .integer(issuedAt + lifetime),
            "aud": .string(audience), "sub": .string(clientID),
        ]
        do {
            return try JWTSigner.sign(claims: claims, keyID: keyID, key: .es256(key))
        } catch {
            throw .signing(error)
        }
    }
}

/// Caches client secrets per client id (web Services ID, native bundle ids) and re-mints one
/// when less than a fifth of its lifetime (at most 5 minutes) remains. Thread-safe.
public final class ClientSecretProvider: Sendable {
    public let teamID: String
    public let keyID: String
    public let audience: String
    public let lifetime: Int64
    private let key: P256PrivateKey
    private let clock: @Sendable () -> Int64
    private let cache = Mutex<[String: (secret: String, expiresAt: Int64)]>([:])

    /// - Parameters:
    ///   - lifetime: `apple.client_secret_ttl`, at most `AppleClientSecret.maximumLifetime`.
    ///   - clock: current Unix time in seconds.
    public init(teamID: String, keyID: String, key: P256PrivateKey, audience: String, lifetime: Int64,
                clock: @escaping @Sendable () -> Int64) throws(AppleClientSecret.Error) {
        guard lifetime > 0, lifetime <= AppleClientSecret.maximumLifetime else { throw .lifetimeOutOfRange }
        self.teamID = teamID
        self.keyID = keyID
        self.key = key
        self.audience = audience
        self.lifetime = lifetime
        self.clock = clock
    }

    private var renewalMargin: Int64 { min(300, lifetime / 5) }

    /// A valid secret whose `sub` is `clientID`.
    public func secret(forClientID clientID: String) throws(AppleClientSecret.Error) -> String {
        let now = clock()
        if let cached = cache.withLock({ $0[clientID] }), now < cached.expiresAt - renewalMargin, now >= cached.expiresAt - lifetime {
            return cached.secret
        }
        let secret = try AppleClientSecret.mint(teamID: teamID, clientID: clientID, keyID: keyID, key: key,
                                                audience: audience, issuedAt: now, lifetime: lifetime)
        cache.withLock { $0[clientID] = (secret, now + lifetime) }
        return secret
    }
}
