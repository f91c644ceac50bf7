/// JWS in the flattened JSON serialization (RFC 7515 §7.2.2), as ACME (RFC 8555 §6.2) sends
/// every request: `{"protected", "payload", "signature"}`, one signature, the header only in
/// `protected`.
public enum JWSFlattened {
    /// `payload` nil is ACME's POST-as-GET: an empty `payload` member, not `"e30"` (`{}`).
    public static func sign(
        protected header: [String: JSONValue], payload: [UInt8]?, key: JWSSigningKey
    ) throws(CryptoError) -> JSONValue {
        var header = header
        header["alg"] = .string(key.algorithm.rawValue)
        let protected = Base64URL.encode(Array(JSONValue.object(header).jsonText.utf8))
        let encodedPayload = payload.map { Base64URL.encode($0) } ?? ""
        let signature = try key.sign(Array((protected + "." + encodedPayload).utf8))
        return .object([
            "protected": .string(protected), "payload": .string(encodedPayload),
            "signature": .string(Base64URL.encode(signature)),
        ])
    }

    /// A MAC'd JWS (HS256) over `payload`: ACME's External Account Binding (RFC 8555 §7.3.4),
    /// the one place JOSE here uses a symmetric key. Never accepted on input.
    public static func macHS256(
        protected header: [String: JSONValue], payload: [UInt8], key: [UInt8]
    ) -> JSONValue {
        var header = header
        header["alg"] = .string("HS256")
        let protected = Base64URL.encode(Array(JSONValue.object(header).jsonText.utf8))
        let encodedPayload = Base64URL.encode(payload)
        let tag = HMACSHA256.authenticate(key: key, message: Array((protected + "." + encodedPayload).utf8))
        return .object([
            "protected": .string(protected), "payload": .string(encodedPayload),
            "signature": .string(Base64URL.encode(tag)),
        ])
    }
}

extension JWSSigningKey {
    /// The public key as a JWK with only the members RFC 7638 hashes (ACME's `jwk` header and
    /// the key authorization's thumbprint use exactly these).
    public var publicJWK: JSONValue {
        switch self {
        case .es256(let key):
            .object([
                "crv": .string("P-256"), "kty": .string("EC"), "x": .string(key.publicKey.jwkX),
                "y": .string(key.publicKey.jwkY),
            ])
        case .rs256(let key):
            .object([
                "e": .string(key.publicKey.jwkExponent), "kty": .string("RSA"), "n": .string(key.publicKey.jwkModulus),
            ])
        }
    }

    /// RFC 7638 thumbprint: SHA-256 of the required members, sorted, without whitespace
    /// (`jsonText` sorts keys and writes no spaces).
    public var thumbprint: String {
        Base64URL.encode(SHA256.hash(Array(publicJWK.jsonText.utf8)))
    }

    /// The private key as PKCS#8 PEM, to be stored.
    public func pkcs8PEM() throws(CryptoError) -> String {
        switch self {
        case .es256(let key): try key.pkcs8PEM()
        case .rs256(let key): try key.pkcs8PEM()
        }
    }

    /// Reads a stored P-256 or RSA key.
    public init(pem: some Collection<UInt8>) throws(CryptoError) {
        switch try PrivateKeyKind(pem: pem) {
        case .rsa: self = .rs256(try RSAPrivateKey(pem: pem))
        case let kind where kind.isP256: self = .es256(try P256PrivateKey(pem: pem))
        case let kind: throw .invalidKey("\(kind), not P-256 or RSA")
        }
    }
}
