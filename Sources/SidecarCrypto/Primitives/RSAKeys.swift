import COpenSSL

/// An RSA public key for RS256 (RSASSA-PKCS1-v1_5 with SHA-256) verification.
///
/// Accepted sizes: 2048 to 4096 bits (Apple's keys are 2048; 3072/4096 are accepted for other
/// issuers and tested with Wycheproof). Smaller moduli are refused as too weak, larger ones as a
/// denial-of-service risk. The exponent must be odd, at least 3 and at most 32 bits.
public struct RSAPublicKey: Sendable {
    public static let allowedBitCounts = 2048...4096
    let key: EVPKey
    /// Big-endian modulus without leading zeros.
    public let modulus: [UInt8]
    /// Big-endian public exponent without leading zeros.
    public let exponent: [UInt8]

    /// Builds the key from big-endian `n` and `e` (leading zero bytes allowed).
    public init(modulus: some Collection<UInt8>, exponent: some Collection<UInt8>) throws(CryptoError) {
        let n = Array(modulus.drop { $0 == 0 })
        let e = Array(exponent.drop { $0 == 0 })
        let bits = n.isEmpty ? 0 : n.count * 8 - n[0].leadingZeroBitCount
        guard Self.allowedBitCounts.contains(bits) else { throw .invalidKey("RSA modulus of \(bits) bits") }
        guard let low = e.last, e.count <= 4, low & 1 == 1, e.count > 1 || low >= 3 else {
            throw .invalidKey("RSA public exponent")
        }
        self.key = try Self.makeKey(n: n, e: e)
        self.modulus = n
        self.exponent = e
    }

    /// Builds the key from a JWK's base64url `n` and `e`.
    public init(jwkModulus n: String, jwkExponent e: String) throws(CryptoError) {
        guard let modulus = Base64URL.decode(n), let exponent = Base64URL.decode(e) else {
            throw .invalidKey("JWK n/e are not base64url")
        }
        try self.init(modulus: modulus, exponent: exponent)
    }

    init(evpKey: EVPKey) throws(CryptoError) {
        guard let n = evpKey.bigNumberParameter("n"), let e = evpKey.bigNumberParameter("e") else {
            throw .invalidKey("not an RSA key")
        }
        try self.init(modulus: n, exponent: e)
    }

    /// The modulus size in bytes, which is also the RS256 signature size.
    public var byteCount: Int { modulus.count }

    /// JWK `n` and `e` (base64url).
    public var jwkModulus: String { Base64URL.encode(modulus) }
    public var jwkExponent: String { Base64URL.encode(exponent) }

    /// Whether `signature` is a valid RS256 signature of `message`.
    public func isValidSignature(_ signature: some Collection<UInt8>, for message: some Collection<UInt8>) -> Bool {
        guard signature.count == byteCount else { return false }
        return withContiguousBytes(signature) { key.verifySHA256(signature: $0, message: message) }
    }

    private static func makeKey(n: [UInt8], e: [UInt8]) throws(CryptoError) -> EVPKey {
        guard let bld = OSSL_PARAM_BLD_new() else { throw .openSSL("OSSL_PARAM_BLD_new") }
        defer { OSSL_PARAM_BLD_free(bld) }
        guard let bnN = BN_bin2bn(n, Int32(n.count), nil) else { throw .openSSL("BN_bin2bn") }
        defer { BN_free(bnN) }
        guard let bnE = BN_bin2bn(e, Int32(e.count), nil) else { throw .openSSL("BN_bin2bn") }
        defer { BN_free(bnE) }
        // Names must be the C literals: OSSL_PARAM_BLD keeps them by pointer.
        guard OSSL_PARAM_BLD_push_BN(bld, sidecar_param_rsa_n(), bnN) == 1,
              OSSL_PARAM_BLD_push_BN(bld, sidecar_param_rsa_e(), bnE) == 1,
              let params = OSSL_PARAM_BLD_to_param(bld)
        else { throw .openSSL("OSSL_PARAM_BLD") }
        defer { OSSL_PARAM_free(params) }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else { throw .openSSL("EVP_PKEY_CTX_new_from_name") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var pkey: OpaquePointer?
        guard EVP_PKEY_fromdata_init(ctx) == 1,
              EVP_PKEY_fromdata(ctx, &pkey, sidecar_EVP_PKEY_PUBLIC_KEY(), params) == 1, let pkey
        else {
            ERR_clear_error()
            throw .invalidKey("RSA n/e rejected by OpenSSL")
        }
        return EVPKey(taking: pkey)
    }
}

/// An RSA private key for RS256 signing (used by the Apple emulator to sign id_tokens).
public struct RSAPrivateKey: Sendable {
    let key: EVPKey
    public let publicKey: RSAPublicKey

    /// Generates a fresh key (2048 bits, e = 65537 by default).
    public static func generate(bits: Int = 2048) throws(CryptoError) -> RSAPrivateKey {
        guard RSAPublicKey.allowedBitCounts.contains(bits) else { throw .invalidArgument("RSA key size \(bits)") }
        let key = try EVPKey.generate(algorithm: "RSA") { EVP_PKEY_CTX_set_rsa_keygen_bits($0, Int32(bits)) }
        return try RSAPrivateKey(key: key)
    }

    /// Reads a PEM private key (PKCS#8 or traditional `RSA PRIVATE KEY`).
    public init(pem: some Collection<UInt8>) throws(CryptoError) {
        let key = try EVPKey.privateKey(pem: pem)
        guard EVP_PKEY_get_id(key.pointer) == EVP_PKEY_RSA else { throw .invalidKey("not an RSA private key") }
        try self.init(key: key)
    }

    private init(key: EVPKey) throws(CryptoError) {
        self.key = key
        self.publicKey = try RSAPublicKey(evpKey: key)
    }

    /// The key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    public func pkcs8PEM() throws(CryptoError) -> String { try key.privateKeyPKCS8PEM }

    /// The RS256 signature of `message` (modulus-sized).
    public func sign(_ message: some Collection<UInt8>) throws(CryptoError) -> [UInt8] {
        try key.signSHA256(message)
    }
}
