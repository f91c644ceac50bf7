/// Raw bytes a request head is assembled in, field by field, before they become its storage
/// array in one copy: each append here is a plain memory move, where an array's append
/// (uniqueness, capacity and count checks through the generic sequence path) costs several
/// times a short field's copy. One per codec session, reused for each head it builds.
public final class HeadScratch {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    public private(set) var count = 0

    public init(capacity: Int = 512) {
        self.capacity = max(capacity, 16)
        base = .allocate(capacity: self.capacity)
    }

    deinit {
        base.deallocate()
    }

    public func removeAll() {
        count = 0
    }

    @inline(__always)
    public func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        UnsafeMutableRawPointer(base + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    @inline(__always)
    func append(_ first: UInt8, _ second: UInt8) {
        reserve(2)
        base[count] = first
        base[count + 1] = second
        count += 2
    }

    /// The bytes so far, valid until the next append.
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// `count` bytes from `start`, valid until the next append.
    public func bytes(_ start: Int, _ count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + start, count: count)
    }

    @inline(__always)
    private func reserve(_ more: Int) {
        if count + more > capacity { grow(count + more) }
    }

    private func grow(_ needed: Int) {
        var grown = capacity * 2
        while grown < needed { grown *= 2 }
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        moved.update(from: base, count: count)
        base.deallocate()
        base = moved
        capacity = grown
    }
}
