import SidecarHTTP

/// Growable bytes written through a pointer (`reserve` then `commit`), for log lines.
/// Loop thread only.
final class LineBuffer {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int = 4096) {
        self.capacity = max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    var isEmpty: Bool { count == 0 }
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }
    var array: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    func reserveCapacity(_ total: Int) { if total > capacity { grow(to: total) } }

    /// Room for `n` more bytes at the end; `commit` then counts what was written there.
    @inline(__always)
    func reserve(_ n: Int) -> UnsafeMutablePointer<UInt8> {
        if count + n > capacity { grow(to: count + n) }
        return base + count
    }

    @inline(__always)
    func commit(_ n: Int) { count += n }

    @inline(__always)
    func append(_ byte: UInt8) {
        reserve(1).pointee = byte
        count += 1
    }

    @inline(__always)
    func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        SmallCopy.copy(reserve(bytes.count), source, bytes.count)
        count += bytes.count
    }

    func append(_ bytes: Slice<UnsafeRawBufferPointer>) {
        append(UnsafeRawBufferPointer(rebasing: bytes).assumingMemoryBound(to: UInt8.self))
    }

    func removeAll() { count = 0 }

    private func grow(to needed: Int) {
        var size = capacity * 2
        while size < needed { size *= 2 }
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: size)
        grown.update(from: base, count: count)
        base.deallocate()
        base = grown
        capacity = size
    }
}
