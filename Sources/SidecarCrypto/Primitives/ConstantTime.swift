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

    /// The same over raw memory, for per-request callers: every byte is read whatever the
    /// differences (XOR accumulated eight bytes at a time, no early exit).
    public static func equals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt64 = 0
        var i = 0
        while i + 32 <= a.count {  // four words per step: long session tokens are compared per request
            let d0 = a.loadUnaligned(fromByteOffset: i, as: UInt64.self) ^ b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            let d1 = a.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self)
                ^ b.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self)
            let d2 = a.loadUnaligned(fromByteOffset: i + 16, as: UInt64.self)
                ^ b.loadUnaligned(fromByteOffset: i + 16, as: UInt64.self)
            let d3 = a.loadUnaligned(fromByteOffset: i + 24, as: UInt64.self)
                ^ b.loadUnaligned(fromByteOffset: i + 24, as: UInt64.self)
            difference |= (d0 | d1) | (d2 | d3)
            i += 32
        }
        while i + 8 <= a.count {
            difference |= a.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                ^ b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            i += 8
        }
        while i < a.count {
            difference |= UInt64(a[i] ^ b[i])
            i += 1
        }
        return difference == 0
    }
}
