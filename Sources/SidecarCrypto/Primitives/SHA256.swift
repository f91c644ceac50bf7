import COpenSSL

/// SHA-256 over OpenSSL's EVP digest.
public enum SHA256 {
    public static let byteCount = 32

    /// The 32-byte SHA-256 digest of `data`.
    public static func hash(_ data: some Collection<UInt8>) -> [UInt8] {
        withContiguousBytes(data) { input in
            [UInt8](unsafeUninitializedCapacity: byteCount) { out, count in
                var length: UInt32 = 0
                // EVP_Digest with a built-in digest cannot fail on valid pointers.
                let ok = EVP_Digest(nonNullBase(input), input.count, out.baseAddress, &length, EVP_sha256(), nil)
                count = ok == 1 ? Int(length) : 0
            }
        }
    }

    /// Lower-case hex of the SHA-256 digest (the form some Apple client libraries put in `nonce`).
    public static func hexDigest(_ data: some Collection<UInt8>) -> String {
        Hex.encode(hash(data))
    }
}
