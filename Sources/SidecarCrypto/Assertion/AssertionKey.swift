/// The P-256 key that signs identity assertions, with its stable `kid`: the
/// RFC 7638 JWK thumbprint, so the same key always has the same id — across restarts,
/// replicas and reloads — and a new key never reuses an old id.
public struct AssertionKey: Sendable {
    public let privateKey: P256PrivateKey
    public let keyID: String

    public init(_ privateKey: P256PrivateKey) {
        self.privateKey = privateKey
        keyID = Self.thumbprint(privateKey.publicKey)
    }

    /// A fresh key (no `assertion.private_key_file`, or one still to be written).
    public static func generate() throws(CryptoError) -> AssertionKey {
        AssertionKey(try P256PrivateKey.generate())
    }

    /// RFC 7638 §3: SHA-256 over the required members in lexicographic order, no whitespace.
    static func thumbprint(_ key: P256PublicKey) -> String {
        let canonical = "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"\(key.jwkX)\",\"y\":\"\(key.jwkY)\"}"
        return Base64URL.encode(SHA256.hash(Array(canonical.utf8)))
    }

    /// The public JWK as published in `jwks.json`.
    public var publicJWK: JSONValue {
        .object([
            "kty": .string("EC"), "crv": .string("P-256"), "x": .string(privateKey.publicKey.jwkX),
            "y": .string(privateKey.publicKey.jwkY), "kid": .string(keyID), "alg": .string("ES256"),
            "use": .string("sig"),
        ])
    }
}

/// The JWK Set of `{prefix}/jwks.json`: the key signing now and, after a rotation, the one
/// before it, so assertions signed just before the change still verify.
public enum AssertionKeySet {
    public static func document(current: AssertionKey, previous: AssertionKey?) -> [UInt8] {
        var keys = [current.publicJWK]
        if let previous, previous.keyID != current.keyID { keys.append(previous.publicJWK) }
        return Array(JSONValue.object(["keys": .array(keys)]).jsonText.utf8)
    }
}
