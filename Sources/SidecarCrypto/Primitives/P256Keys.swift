import COpenSSL

/// A NIST P-256 public key for ES256 verification.
public struct P256PublicKey: Sendable {
    let key: EVPKey
    /// The uncompressed point `04 ‖ x ‖ y` (65 bytes).
    public let uncompressedPoint: [UInt8]

    /// SPKI DER prefix for an uncompressed P-256 point (id-ecPublicKey, prime256v1).
    private static let spkiPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08,
        0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// Builds the key from 32-byte big-endian coordinates; throws if the point is not on the curve.
    public init(x: some Collection<UInt8>, y: some Collection<UInt8>) throws(CryptoError) {
        guard x.count == 32, y.count == 32 else { throw .invalidKey("P-256 coordinates must be 32 bytes") }
        try self.init(uncompressedPoint: [0x04] + Array(x) + Array(y))
    }

    /// Builds the key from the 65-byte uncompressed point.
    public init(uncompressedPoint point: some Collection<UInt8>) throws(CryptoError) {
        let point = Array(point)
        guard point.count == 65, point[0] == 0x04 else { throw .invalidKey("not an uncompressed P-256 point") }
        self.key = try EVPKey.publicKey(der: Self.spkiPrefix + point)
        self.uncompressedPoint = point
    }

    /// Builds the key from JWK `x` and `y` (base64url).
    public init(jwkX: String, jwkY: String) throws(CryptoError) {
        guard let x = Base64URL.decode(jwkX), let y = Base64URL.decode(jwkY) else {
            throw .invalidKey("JWK x/y are not base64url")
        }
        try self.init(x: x, y: y)
    }

    /// Reads an SPKI PEM (`-----BEGIN PUBLIC KEY-----`) holding a P-256 key.
    public init(pem: some Collection<UInt8>) throws(CryptoError) {
        let key = try EVPKey.publicKey(pem: pem)
        try self.init(evpKey: key)
    }

    init(evpKey key: EVPKey) throws(CryptoError) {
        guard P256.isP256(key) else { throw .invalidKey("not a P-256 key") }
        var point = [UInt8](repeating: 0, count: 65)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(key.pointer, "pub", &point, 65, &length) == 1, length == 65 else {
            ERR_clear_error()
            throw .invalidKey("P-256 public point")
        }
        self.key = key
        self.uncompressedPoint = point
    }

    public var x: [UInt8] { Array(uncompressedPoint[1..<33]) }
    public var y: [UInt8] { Array(uncompressedPoint[33..<65]) }
    public var jwkX: String { Base64URL.encode(uncompressedPoint[1..<33]) }
    public var jwkY: String { Base64URL.encode(uncompressedPoint[33..<65]) }

    /// The key as SPKI PEM.
    public func spkiPEM() throws(CryptoError) -> String { try key.publicKeySPKIPEM }

    /// Whether `signature` — JOSE form, raw `r ‖ s`, exactly 64 bytes — is a valid ES256
    /// signature of `message`. r and s must lie in [1, n−1].
    public func isValidSignature(_ signature: some Collection<UInt8>, for message: some Collection<UInt8>) -> Bool {
        let raw = Array(signature)
        guard raw.count == 64 else { return false }
        let r = raw[0..<32], s = raw[32..<64]
        guard P256.isScalarInRange(r), P256.isScalarInRange(s), let der = P256.derSignature(r: r, s: s) else {
            return false
        }
        return der.withUnsafeBufferPointer { key.verifySHA256(signature: $0, message: message) }
    }
}

/// A NIST P-256 private key for ES256 signing (Apple `.p8` client-secret keys, assertion keys).
public struct P256PrivateKey: Sendable {
    let key: EVPKey
    public let publicKey: P256PublicKey

    /// Generates a fresh key.
    public static func generate() throws(CryptoError) -> P256PrivateKey {
        let key = try EVPKey.generate(algorithm: "EC") { EVP_PKEY_CTX_set_group_name($0, "P-256") }
        return try P256PrivateKey(key: key)
    }

    /// Reads a PEM private key — Apple's `.p8` is PKCS#8 (`-----BEGIN PRIVATE KEY-----`) — and
    /// checks that it is on P-256.
    public init(pem: some Collection<UInt8>) throws(CryptoError) {
        try self.init(key: EVPKey.privateKey(pem: pem))
    }

    private init(key: EVPKey) throws(CryptoError) {
        guard P256.isP256(key) else { throw .invalidKey("not a P-256 private key") }
        self.key = key
        self.publicKey = try P256PublicKey(evpKey: key)
    }

    /// The key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`, the `.p8` format).
    public func pkcs8PEM() throws(CryptoError) -> String { try key.privateKeyPKCS8PEM }

    /// The ES256 signature of `message` in JOSE form (raw `r ‖ s`, 64 bytes).
    public func sign(_ message: some Collection<UInt8>) throws(CryptoError) -> [UInt8] {
        let der = try key.signSHA256(message)
        guard let raw = P256.rawSignature(der: der) else { throw .openSSL("ECDSA signature encoding") }
        return raw
    }
}

enum P256 {
    /// The group order n, big-endian.
    static let order: [UInt8] = Hex.decode("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551") ?? []

    static func isP256(_ key: EVPKey) -> Bool {
        guard EVP_PKEY_get_id(key.pointer) == EVP_PKEY_EC else { return false }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(key.pointer, &name, name.count, &length) == 1 else { return false }
        let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return group == "prime256v1" || group == "P-256"
    }

    /// 0 < value < n for a 32-byte big-endian scalar.
    static func isScalarInRange(_ value: ArraySlice<UInt8>) -> Bool {
        guard value.count == 32, value.contains(where: { $0 != 0 }) else { return false }
        for (a, b) in zip(value, order) where a != b { return a < b }
        return false
    }

    /// OpenSSL's DER `ECDSA-Sig-Value` as JOSE's raw `r ‖ s` (each left-padded to 32 bytes);
    /// nil for anything that is not exactly one such value with r, s < 2^256.
    static func rawSignature(der: [UInt8]) -> [UInt8]? {
        der.withUnsafeBufferPointer { der -> [UInt8]? in
            var cursor: UnsafePointer<UInt8>? = der.baseAddress
            guard let sig = d2i_ECDSA_SIG(nil, &cursor, der.count) else {
                ERR_clear_error()
                return nil
            }
            defer { ECDSA_SIG_free(sig) }
            // Trailing bytes after the value would mean it was not what OpenSSL produced.
            guard let cursor, cursor == der.baseAddress! + der.count else { return nil }
            var r: OpaquePointer?
            var s: OpaquePointer?
            ECDSA_SIG_get0(sig, &r, &s)
            var out = [UInt8](repeating: 0, count: 64)
            let ok = out.withUnsafeMutableBufferPointer { out in
                BN_bn2binpad(r, out.baseAddress, 32) == 32 && BN_bn2binpad(s, out.baseAddress! + 32, 32) == 32
            }
            return ok ? out : nil
        }
    }

    static func derSignature(r: ArraySlice<UInt8>, s: ArraySlice<UInt8>) -> [UInt8]? {
        guard let sig = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(sig) }
        let bnR = r.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let bnS = s.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        guard let bnR, let bnS, ECDSA_SIG_set0(sig, bnR, bnS) == 1 else {
            BN_free(bnR)
            BN_free(bnS)
            return nil
        }
        let length = i2d_ECDSA_SIG(sig, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(sig, &cursor)
        }
        return written == length ? der : nil
    }
}
