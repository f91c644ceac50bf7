import COpenSSL

/// An AES-GCM decryption context keyed once and reused with a new nonce per call: for values
/// opened on every request, where a fresh context and key schedule cost more than the
/// decryption itself. Not thread-safe: one per thread.
public final class AESGCMKeyedContext {
    private let context: OpaquePointer

    /// `key`: 16, 24 or 32 bytes. Nonces must then be `AESGCM.nonceByteCount` bytes.
    public init(key: UnsafeBufferPointer<UInt8>) throws(CryptoError) {
        guard let cipher = Ciphers.gcm(keyByteCount: key.count) else {
            throw .invalidArgument("AES-GCM key must be 16, 24 or 32 bytes")
        }
        guard let context = EVP_CIPHER_CTX_new() else { throw .openSSL("EVP_CIPHER_CTX_new") }
        guard EVP_DecryptInit_ex(context, cipher, nil, key.baseAddress, nil) == 1 else {
            EVP_CIPHER_CTX_free(context)
            throw .openSSL("EVP_DecryptInit_ex(AES-GCM)")
        }
        self.context = context
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// Parameter names (`OSSL_CIPHER_PARAM_AEAD_TAG`, `…_AEAD_TLS1_IV_FIXED`,
    /// `…_AEAD_TLS1_SET_IV_INV`); an `OSSL_PARAM` keeps the pointer, so each must outlive
    /// every call (a literal's temporary C string would not).
    nonisolated(unsafe) private static let tagParameterName = permanentCString("tag")
    nonisolated(unsafe) private static let fixedIVParameterName = permanentCString("tlsivfixed")
    nonisolated(unsafe) private static let invocationParameterName = permanentCString("tlsivinv")

    private static func permanentCString(_ name: String) -> UnsafePointer<CChar> {
        let copy = UnsafeMutablePointer<CChar>.allocate(capacity: name.utf8.count + 1)
        name.withCString { copy.initialize(from: $0, count: name.utf8.count + 1) }
        return UnsafePointer(copy)
    }

    /// The nonce's first 4 bytes as the GCM IV's fixed field and its last 8 as the
    /// invocation field (RFC 5288's split, which OpenSSL's provider sets for TLS): with the
    /// tag, one parameter call restarts the GCM state for a new message, about a third of
    /// what `EVP_DecryptInit_ex` with the nonce costs in OpenSSL 3.0, which asks the provider
    /// for the IV length through an `OSSL_PARAM` query on every call (Benchmarks/RESULTS.md).
    static let fixedIVByteCount = 4

    /// Decrypts `body` in place and checks `tag` over `aad ‖ aadSuffix ‖ body`; on a mismatch
    /// `body` is zeroed (never unauthenticated plaintext) and `.authenticationFailed` thrown.
    public func open(
        nonce: UnsafeBufferPointer<UInt8>, aad: UnsafeBufferPointer<UInt8>, aadSuffix: UnsafeBufferPointer<UInt8>,
        body: UnsafeMutableBufferPointer<UInt8>, tag: UnsafeBufferPointer<UInt8>
    ) throws(CryptoError) {
        guard nonce.count == AESGCM.nonceByteCount, tag.count == AESGCM.tagByteCount,
              aad.count + aadSuffix.count < Int(Int32.max), body.count < Int(Int32.max)
        else { throw .invalidArgument("AES-GCM buffer sizes") }
        var written: Int32 = 0
        let mutableTag = UnsafeMutableRawPointer(mutating: tag.baseAddress)
        let fixed = UnsafeMutableRawPointer(mutating: nonce.baseAddress)
        var params = (
            OSSL_PARAM_construct_octet_string(Self.tagParameterName, mutableTag, tag.count),
            OSSL_PARAM_construct_octet_string(Self.fixedIVParameterName, fixed, Self.fixedIVByteCount),
            OSSL_PARAM_construct_octet_string(
                Self.invocationParameterName, fixed.map { $0 + Self.fixedIVByteCount },
                AESGCM.nonceByteCount - Self.fixedIVByteCount),
            OSSL_PARAM_construct_end())
        let restarted = withUnsafeMutablePointer(to: &params) {
            $0.withMemoryRebound(to: OSSL_PARAM.self, capacity: 4) { EVP_CIPHER_CTX_set_params(context, $0) == 1 }
        }
        guard restarted else { throw .openSSL("EVP_CIPHER_CTX_set_params(AES-GCM nonce, tag)") }
        if !aad.isEmpty {
            guard EVP_DecryptUpdate(context, nil, &written, aad.baseAddress, Int32(aad.count)) == 1 else {
                throw .openSSL("EVP_DecryptUpdate(aad)")
            }
        }
        if !aadSuffix.isEmpty {
            guard EVP_DecryptUpdate(context, nil, &written, aadSuffix.baseAddress, Int32(aadSuffix.count)) == 1 else {
                throw .openSSL("EVP_DecryptUpdate(aad)")
            }
        }
        if !body.isEmpty {
            guard EVP_DecryptUpdate(context, body.baseAddress, &written, body.baseAddress, Int32(body.count)) == 1
            else { throw .openSSL("EVP_DecryptUpdate") }
        }
        let authentic = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { final in
            EVP_DecryptFinal_ex(context, final.baseAddress, &written) == 1
        }
        guard authentic else {
            body.update(repeating: 0)
            throw .authenticationFailed
        }
    }
}
