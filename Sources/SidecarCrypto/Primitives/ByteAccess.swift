/// Runs `body` over contiguous bytes of `bytes`, copying only when the collection is not contiguous.
@inline(__always)
func withContiguousBytes<C: Collection<UInt8>, R, E: Error>(
    _ bytes: C, _ body: (UnsafeBufferPointer<UInt8>) throws(E) -> R
) throws(E) -> R {
    // `withContiguousStorageIfAvailable` has an untyped rethrow; route the typed error through a Result.
    let fast: Result<R, E>? = bytes.withContiguousStorageIfAvailable { buffer in
        do throws(E) { return .success(try body(buffer)) } catch { return .failure(error) }
    }
    if let fast { return try fast.get() }
    let copy = Array(bytes)
    return try copy.withUnsafeBufferPointer { buffer throws(E) in try body(buffer) }
}

/// A non-null pointer for OpenSSL calls that reject NULL even when the length is zero.
@inline(__always)
func nonNullBase(_ buffer: UnsafeBufferPointer<UInt8>) -> UnsafePointer<UInt8> {
    buffer.baseAddress ?? emptyBytePointer
}

nonisolated(unsafe) private let emptyByteStorage = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
private var emptyBytePointer: UnsafePointer<UInt8> { UnsafePointer(emptyByteStorage) }
