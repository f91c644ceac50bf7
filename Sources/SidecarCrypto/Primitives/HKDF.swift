import COpenSSL

/// HKDF-SHA256 (RFC 5869) over OpenSSL's EVP_KDF.
public enum HKDFSHA256 {
    /// The largest output RFC 5869 allows: 255 blocks of 32 bytes.
    public static let maximumOutputByteCount = 255 * SHA256.byteCount

    /// Derives `outputByteCount` bytes from input keying material, salt and info.
    public static func deriveKey(
        inputKeyMaterial ikm: some Collection<UInt8>, salt: some Collection<UInt8>,
        info: some Collection<UInt8>, outputByteCount: Int
    ) throws(CryptoError) -> [UInt8] {
        guard outputByteCount > 0, outputByteCount <= maximumOutputByteCount else {
            throw .invalidArgument("HKDF output length must be 1...\(maximumOutputByteCount)")
        }
        guard let kdf = EVP_KDF_fetch(nil, "HKDF", nil) else { throw .openSSL("EVP_KDF_fetch(HKDF)") }
        defer { EVP_KDF_free(kdf) }
        guard let ctx = EVP_KDF_CTX_new(kdf) else { throw .openSSL("EVP_KDF_CTX_new") }
        defer { EVP_KDF_CTX_free(ctx) }

        let digest: StaticString = "SHA256"
        return try withContiguousBytes(ikm) { ikm throws(CryptoError) in
            try withContiguousBytes(salt) { salt throws(CryptoError) in
                try withContiguousBytes(info) { info throws(CryptoError) in
                    var params = [
                        OSSL_PARAM_construct_utf8_string(
                            sidecar_kdf_param_digest(),
                            UnsafeMutableRawPointer(mutating: digest.utf8Start).assumingMemoryBound(to: CChar.self), 0),
                        OSSL_PARAM_construct_octet_string(
                            sidecar_kdf_param_key(), UnsafeMutableRawPointer(mutating: nonNullBase(ikm)), ikm.count),
                        OSSL_PARAM_construct_octet_string(
                            sidecar_kdf_param_salt(), UnsafeMutableRawPointer(mutating: nonNullBase(salt)), salt.count),
                        OSSL_PARAM_construct_octet_string(
                            sidecar_kdf_param_info(), UnsafeMutableRawPointer(mutating: nonNullBase(info)), info.count),
                        OSSL_PARAM_construct_end(),
                    ]
                    var output = [UInt8](repeating: 0, count: outputByteCount)
                    let ok = output.withUnsafeMutableBufferPointer { out in
                        EVP_KDF_derive(ctx, out.baseAddress, outputByteCount, &params)
                    }
                    guard ok == 1 else { throw .openSSL("EVP_KDF_derive(HKDF)") }
                    return output
                }
            }
        }
    }
}
