import COpenSSL

/// Owns an `EVP_PKEY`. The key is never mutated after construction, and OpenSSL 3 allows
/// concurrent sign/verify on one `EVP_PKEY` with a fresh context per call, so sharing is safe.
final class EVPKey: @unchecked Sendable {
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }

    /// Reads a private key from PEM (PKCS#8 `PRIVATE KEY`, or the traditional RSA/EC forms).
    static func privateKey(pem: some Collection<UInt8>) throws(CryptoError) -> EVPKey {
        try withContiguousBytes(pem) { pem throws(CryptoError) in
            guard pem.count < Int(Int32.max), let bio = BIO_new_mem_buf(pem.baseAddress, Int32(pem.count)) else {
                throw .invalidKey("unreadable PEM")
            }
            defer { BIO_free(bio) }
            // A password callback that declines: with none, OpenSSL would prompt on the
            // terminal for an encrypted key, so `check` run by hand could pass a key that
            // `run` under a service manager cannot read.
            guard let key = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil) else {
                ERR_clear_error()
                throw .invalidKey("not a PEM private key")
            }
            return EVPKey(taking: key)
        }
    }

    /// Reads a public key from an SPKI PEM (`PUBLIC KEY`).
    static func publicKey(pem: some Collection<UInt8>) throws(CryptoError) -> EVPKey {
        try withContiguousBytes(pem) { pem throws(CryptoError) in
            guard pem.count < Int(Int32.max), let bio = BIO_new_mem_buf(pem.baseAddress, Int32(pem.count)) else {
                throw .invalidKey("unreadable PEM")
            }
            defer { BIO_free(bio) }
            guard let key = PEM_read_bio_PUBKEY(bio, nil, nil, nil) else {
                ERR_clear_error()
                throw .invalidKey("not a PEM public key")
            }
            return EVPKey(taking: key)
        }
    }

    /// Reads a public key from SPKI DER.
    static func publicKey(der: [UInt8]) throws(CryptoError) -> EVPKey {
        try der.withUnsafeBufferPointer { der throws(CryptoError) in
            var cursor: UnsafePointer<UInt8>? = der.baseAddress
            guard let key = d2i_PUBKEY(nil, &cursor, der.count) else {
                ERR_clear_error()
                throw .invalidKey("not a valid public key")
            }
            return EVPKey(taking: key)
        }
    }

    /// Generates a key with `configure` applied to the keygen context (e.g. bits or curve).
    static func generate(algorithm: String, configure: (OpaquePointer) -> Int32) throws(CryptoError) -> EVPKey {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, algorithm, nil) else { throw .openSSL("EVP_PKEY_CTX_new_from_name") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1, configure(ctx) == 1, EVP_PKEY_generate(ctx, &key) == 1, let key else {
            throw .openSSL("EVP_PKEY_generate(\(algorithm))")
        }
        return EVPKey(taking: key)
    }

    var privateKeyPKCS8PEM: String {
        get throws(CryptoError) {
            try writePEM { bio in PEM_write_bio_PrivateKey(bio, pointer, nil, nil, 0, nil, nil) }
        }
    }

    var publicKeySPKIPEM: String {
        get throws(CryptoError) { try writePEM { bio in PEM_write_bio_PUBKEY(bio, pointer) } }
    }

    private func writePEM(_ write: (OpaquePointer) -> Int32) throws(CryptoError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw .openSSL("BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw .openSSL("PEM_write_bio") }
        var data: UnsafeMutablePointer<CChar>?
        let length = sidecar_BIO_get_mem_data(bio, &data)
        guard length > 0, let data else { throw .openSSL("BIO_get_mem_data") }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    /// Signs `message` with SHA-256 (PKCS#1 v1.5 for RSA, DER ECDSA for EC).
    func signSHA256(_ message: some Collection<UInt8>) throws(CryptoError) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { throw .openSSL("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pointer) == 1 else { throw .openSSL("EVP_DigestSignInit") }
        return try withContiguousBytes(message) { message throws(CryptoError) in
            var length = 0
            guard EVP_DigestSign(ctx, nil, &length, nonNullBase(message), message.count) == 1 else {
                throw .openSSL("EVP_DigestSign(size)")
            }
            var signature = [UInt8](repeating: 0, count: length)
            guard EVP_DigestSign(ctx, &signature, &length, nonNullBase(message), message.count) == 1 else {
                throw .openSSL("EVP_DigestSign")
            }
            return Array(signature.prefix(length))
        }
    }

    /// Verifies a SHA-256 signature in OpenSSL's native encoding for the key type.
    func verifySHA256(signature: UnsafeBufferPointer<UInt8>, message: some Collection<UInt8>) -> Bool {
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, pointer) == 1 else {
            ERR_clear_error()
            return false
        }
        let ok = withContiguousBytes(message) { message in
            EVP_DigestVerify(ctx, nonNullBase(signature), signature.count, nonNullBase(message), message.count) == 1
        }
        if !ok { ERR_clear_error() }
        return ok
    }

    func bigNumberParameter(_ name: String) -> [UInt8]? {
        var bn: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pointer, name, &bn) == 1, let bn else { return nil }
        defer { BN_free(bn) }
        return BigNumber.bytes(bn)
    }
}

enum BigNumber {
    /// Minimal big-endian bytes of `bn` (at least one byte).
    static func bytes(_ bn: OpaquePointer) -> [UInt8] {
        let count = max(1, Int((BN_num_bits(bn) + 7) / 8))
        var out = [UInt8](repeating: 0, count: count)
        _ = BN_bn2binpad(bn, &out, Int32(count))
        return out
    }
}
