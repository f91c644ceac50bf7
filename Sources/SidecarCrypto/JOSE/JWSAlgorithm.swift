/// The JWS algorithms this product implements. Everything else (`none`, `HS*`, `PS*`, …) is
/// refused by name before any key is consulted.
public enum JWSAlgorithm: String, Sendable, Hashable, CaseIterable {
    case rs256 = "RS256"
    case es256 = "ES256"
}

/// A public key able to verify one algorithm.
public enum JWSVerificationKey: Sendable {
    case rsa(RSAPublicKey)
    case p256(P256PublicKey)

    func verifies(_ algorithm: JWSAlgorithm) -> Bool {
        switch (self, algorithm) {
        case (.rsa, .rs256), (.p256, .es256): true
        default: false
        }
    }

    func isValidSignature(_ signature: [UInt8], for message: some Collection<UInt8>) -> Bool {
        switch self {
        case .rsa(let key): key.isValidSignature(signature, for: message)
        case .p256(let key): key.isValidSignature(signature, for: message)
        }
    }
}

/// A private key able to sign one algorithm.
public enum JWSSigningKey: Sendable {
    case rs256(RSAPrivateKey)
    case es256(P256PrivateKey)

    public var algorithm: JWSAlgorithm {
        switch self {
        case .rs256: .rs256
        case .es256: .es256
        }
    }

    func sign(_ message: some Collection<UInt8>) throws(CryptoError) -> [UInt8] {
        switch self {
        case .rs256(let key): try key.sign(message)
        case .es256(let key): try key.sign(message)
        }
    }
}

/// Looks up verification keys by `kid`.
public protocol JWSKeyResolver: Sendable {
    func verificationKey(forKeyID keyID: String) -> JWSVerificationKey?
}
