/// The exporter's one body buffer, reused batch after batch: fixed pieces are copied in
/// whole rather than appended byte by byte to an array.
final class JSONBuffer {
    private(set) var base: UnsafeMutableRawPointer
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int = 64 * 1024) {
        self.capacity = max(64, capacity)
        base = .allocate(byteCount: self.capacity, alignment: 8)
    }

    deinit { base.deallocate() }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    func removeAll() { count = 0 }

    @inline(__always) private func reserve(_ more: Int) {
        guard count + more > capacity else { return }
        var grown = capacity * 2
        while grown < count + more { grown *= 2 }
        let moved = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 8)
        moved.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = moved
        capacity = grown
    }

    @inline(__always) func append(_ text: StaticString) {
        reserve(text.utf8CodeUnitCount)
        (base + count).copyMemory(from: text.utf8Start, byteCount: text.utf8CodeUnitCount)
        count += text.utf8CodeUnitCount
    }

    func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress else { return }
        reserve(bytes.count)
        (base + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    func append(_ byte: UInt8) {
        reserve(1)
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    /// Eight bytes as they lie in memory (`Hex16.digits`' order).
    @inline(__always) func append(word: UInt64) {
        reserve(8)
        base.storeBytes(of: word, toByteOffset: count, as: UInt64.self)
        count += 8
    }
}
