import COpenSSL

/// HMAC-SHA256.
public enum HMACSHA256 {
    /// The full 32-byte authentication tag of `message` under `key`.
    public static func authenticate(key: some Collection<UInt8>, message: some Collection<UInt8>) -> [UInt8] {
        withContiguousBytes(key) { key in
            withContiguousBytes(message) { message in
                [UInt8](unsafeUninitializedCapacity: SHA256.byteCount) { out, count in
                    var length: UInt32 = 0
                    let result = HMAC(EVP_sha256(), nonNullBase(key), Int32(key.count),
                                      nonNullBase(message), message.count, out.baseAddress, &length)
                    count = result == nil ? 0 : Int(length)
                }
            }
        }
    }

    /// Whether `tag` authenticates `message`, compared in constant time. A tag shorter than 32 bytes
    /// is checked as a truncated HMAC (its length must be at least 16 bytes).
    public static func isValid(tag: some Collection<UInt8>, key: some Collection<UInt8>,
                               message: some Collection<UInt8>) -> Bool {
        let expected = authenticate(key: key, message: message)
        guard expected.count == SHA256.byteCount, tag.count >= 16, tag.count <= expected.count else { return false }
        return ConstantTime.equals(expected.prefix(tag.count), tag)
    }
}
