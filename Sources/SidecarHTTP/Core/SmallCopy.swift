/// Copies of a few bytes without a call. Heads and access lines are written as dozens of
/// pieces of 1 to 30 bytes (a key, a method, a run of kept field lines), and for those
/// `memcpy`'s call and its dispatch on the size cost more than the copy itself.
public enum SmallCopy {
    /// Copies `count` bytes from `source` to `destination` (which must not overlap): up to 32
    /// bytes as loads and stores of two overlapping words each way, more through `memcpy`.
    /// Reads and writes no byte outside the two ranges.
    @inlinable @inline(__always)
    public static func copy(_ destination: UnsafeMutableRawPointer, _ source: UnsafeRawPointer, _ count: Int) {
        if count >= 8 {
            if count > 32 {
                destination.copyMemory(from: source, byteCount: count)
            } else if count > 16 {
                let a = source.loadUnaligned(as: UInt64.self)
                let b = source.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
                let c = source.loadUnaligned(fromByteOffset: count &- 16, as: UInt64.self)
                let d = source.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
                destination.storeBytes(of: a, as: UInt64.self)
                destination.storeBytes(of: b, toByteOffset: 8, as: UInt64.self)
                destination.storeBytes(of: c, toByteOffset: count &- 16, as: UInt64.self)
                destination.storeBytes(of: d, toByteOffset: count &- 8, as: UInt64.self)
            } else {
                let a = source.loadUnaligned(as: UInt64.self)
                let b = source.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
                destination.storeBytes(of: a, as: UInt64.self)
                destination.storeBytes(of: b, toByteOffset: count &- 8, as: UInt64.self)
            }
        } else if count >= 4 {
            let a = source.loadUnaligned(as: UInt32.self)
            let b = source.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self)
            destination.storeBytes(of: a, as: UInt32.self)
            destination.storeBytes(of: b, toByteOffset: count &- 4, as: UInt32.self)
        } else if count > 0 {
            let first = source.load(as: UInt8.self)
            let middle = source.load(fromByteOffset: count &>> 1, as: UInt8.self)
            let last = source.load(fromByteOffset: count &- 1, as: UInt8.self)
            destination.storeBytes(of: first, as: UInt8.self)
            destination.storeBytes(of: middle, toByteOffset: count &>> 1, as: UInt8.self)
            destination.storeBytes(of: last, toByteOffset: count &- 1, as: UInt8.self)
        }
    }
}
