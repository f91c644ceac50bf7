import COpenSSL

/// AES-GCM authenticated encryption (128-, 192- or 256-bit keys; 16-byte tags).
/// Nonces of 1...128 bytes are accepted for interoperability (128 is OpenSSL 3's limit); new code
/// should use 12 bytes.
public enum AESGCM {
    public static let nonceByteCount = 12
    public static let tagByteCount = 16
    public static let maximumNonceByteCount = 128

    /// Encrypts `plaintext`, authenticating it together with `aad`.
    public static func seal(
        key: some Collection<UInt8>, nonce: some Collection<UInt8>,
        plaintext: some Collection<UInt8>, aad: some Collection<UInt8> = [UInt8]()
    ) throws(CryptoError) -> (ciphertext: [UInt8], tag: [UInt8]) {
        let input = Array(plaintext)
        var ciphertext = [UInt8](repeating: 0, count: input.count)
        var tag = [UInt8](repeating: 0, count: tagByteCount)
        try withContiguousBytes(key) { key throws(CryptoError) in
            try withContiguousBytes(nonce) { nonce throws(CryptoError) in
                try withContiguousBytes(aad) { aad throws(CryptoError) in
                    try input.withUnsafeBufferPointer { input throws(CryptoError) in
                        try ciphertext.withUnsafeMutableBufferPointer { output throws(CryptoError) in
                            try tag.withUnsafeMutableBufferPointer { tag throws(CryptoError) in
                                try crypt(encrypt: true, key: key, nonce: nonce, aad: aad,
                                          input: input, output: output, tag: tag)
                            }
                        }
                    }
                }
            }
        }
        return (ciphertext, tag)
    }

    /// Decrypts and authenticates; throws `.authenticationFailed` on any mismatch.
    public static func open(
        key: some Collection<UInt8>, nonce: some Collection<UInt8>, ciphertext: some Collection<UInt8>,
        tag: some Collection<UInt8>, aad: some Collection<UInt8> = [UInt8]()
    ) throws(CryptoError) -> [UInt8] {
        var tagBytes = Array(tag)
        guard tagBytes.count == tagByteCount else { throw .authenticationFailed }
        let input = Array(ciphertext)
        var plaintext = [UInt8](repeating: 0, count: input.count)
        try withContiguousBytes(key) { key throws(CryptoError) in
            try withContiguousBytes(nonce) { nonce throws(CryptoError) in
                try withContiguousBytes(aad) { aad throws(CryptoError) in
                    try input.withUnsafeBufferPointer { input throws(CryptoError) in
                        try plaintext.withUnsafeMutableBufferPointer { output throws(CryptoError) in
                            try tagBytes.withUnsafeMutableBufferPointer { tag throws(CryptoError) in
                                try crypt(encrypt: false, key: key, nonce: nonce, aad: aad,
                                          input: input, output: output, tag: tag)
                            }
                        }
                    }
                }
            }
        }
        return plaintext
    }

    /// The core: `output` must have `input.count` bytes and may be the same memory as `input`.
    /// The associated data is `aad` followed by `aadSuffix`. Encrypting writes `tag`; decrypting checks it.
    static func crypt(
        encrypt: Bool, key: UnsafeBufferPointer<UInt8>, nonce: UnsafeBufferPointer<UInt8>,
        aad: UnsafeBufferPointer<UInt8>, aadSuffix: UnsafeBufferPointer<UInt8> = UnsafeBufferPointer(start: nil, count: 0),
        input: UnsafeBufferPointer<UInt8>,
        output: UnsafeMutableBufferPointer<UInt8>, tag: UnsafeMutableBufferPointer<UInt8>
    ) throws(CryptoError) {
        guard let cipher = Ciphers.gcm(keyByteCount: key.count) else {
            throw .invalidArgument("AES-GCM key must be 16, 24 or 32 bytes")
        }
        guard !nonce.isEmpty, nonce.count <= maximumNonceByteCount else { throw .invalidArgument("AES-GCM nonce length") }
        guard tag.count == tagByteCount, output.count == input.count, input.count < Int(Int32.max) else {
            throw .invalidArgument("AES-GCM buffer sizes")
        }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw .openSSL("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let mode: Int32 = encrypt ? 1 : 0
        guard EVP_CipherInit_ex(ctx, cipher, nil, nil, nil, mode) == 1,
              EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(nonce.count), nil) == 1,
              EVP_CipherInit_ex(ctx, nil, nil, key.baseAddress, nonce.baseAddress, mode) == 1
        else { throw .openSSL("EVP_CipherInit_ex(AES-GCM)") }

        var written: Int32 = 0
        if !aad.isEmpty {
            guard aad.count < Int(Int32.max),
                  EVP_CipherUpdate(ctx, nil, &written, aad.baseAddress, Int32(aad.count)) == 1
            else { throw .openSSL("EVP_CipherUpdate(aad)") }
        }
        if !aadSuffix.isEmpty {
            guard aadSuffix.count < Int(Int32.max),
                  EVP_CipherUpdate(ctx, nil, &written, aadSuffix.baseAddress, Int32(aadSuffix.count)) == 1
            else { throw .openSSL("EVP_CipherUpdate(aad)") }
        }
        if !input.isEmpty {
            guard EVP_CipherUpdate(ctx, output.baseAddress, &written, input.baseAddress, Int32(input.count)) == 1
            else { throw .openSSL("EVP_CipherUpdate") }
        }
        // GCM's final step writes no bytes; OpenSSL still wants somewhere to write them.
        let finished = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { final in
            if encrypt {
                return EVP_CipherFinal_ex(ctx, final.baseAddress, &written) == 1
                    && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(tagByteCount), tag.baseAddress) == 1
            }
            return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(tagByteCount), tag.baseAddress) == 1
                && EVP_CipherFinal_ex(ctx, final.baseAddress, &written) == 1
        }
        guard finished else {
            guard !encrypt else { throw .openSSL("EVP_CipherFinal_ex") }
            // Never hand out unauthenticated plaintext.
            if let base = output.baseAddress { memset(base, 0, output.count) }
            throw .authenticationFailed
        }
    }
}

/// Ciphers fetched once: implicit fetching on every call is measurably slower in OpenSSL 3.
enum Ciphers {
    nonisolated(unsafe) static let aes128 = EVP_CIPHER_fetch(nil, "AES-128-GCM", nil)
    nonisolated(unsafe) static let aes192 = EVP_CIPHER_fetch(nil, "AES-192-GCM", nil)
    nonisolated(unsafe) static let aes256 = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil)

    static func gcm(keyByteCount: Int) -> OpaquePointer? {
        switch keyByteCount {
        case 16: aes128
        case 24: aes192
        case 32: aes256
        default: nil
        }
    }
}
