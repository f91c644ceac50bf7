import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's DRBG.
public enum SecureRandom {
    /// `count` random bytes.
    public static func bytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count)
        try output.withUnsafeMutableBufferPointer { buffer throws(CryptoError) in try fill(buffer) }
        return output
    }

    /// Fills `buffer` with random bytes.
    public static func fill(_ buffer: UnsafeMutableBufferPointer<UInt8>) throws(CryptoError) {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        guard buffer.count <= Int(Int32.max), RAND_bytes(base, Int32(buffer.count)) == 1 else {
            throw .openSSL("RAND_bytes")
        }
    }
}
