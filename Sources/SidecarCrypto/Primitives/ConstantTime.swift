import COpenSSL

/// Comparisons whose timing does not depend on where secret bytes differ.
public enum ConstantTime {
    /// Whether `a` and `b` are equal. Only the lengths (which are public) may leak through timing.
    public static func equals(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return withContiguousBytes(a) { a in
            withContiguousBytes(b) { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
    }

    /// The same over raw memory, without the generic path (for per-request callers).
    public static func equals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0
    }
}
