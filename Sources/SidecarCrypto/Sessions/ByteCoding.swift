/// Appends big-endian, length-prefixed fields for the sealed payload codecs.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public mutating func write(_ value: UInt8) { bytes.append(value) }
    public mutating func write(_ value: Int64) {
        let bits = UInt64(bitPattern: value)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
    }
    public mutating func write(raw: some Collection<UInt8>) { bytes.append(contentsOf: raw) }
    /// A string with a 1-byte (`wide == false`) or 2-byte length prefix; the caller keeps it within bounds.
    public mutating func write(_ string: String, wide: Bool) {
        let utf8 = string.utf8
        if wide {
            bytes.append(UInt8(truncatingIfNeeded: utf8.count >> 8))
        }
        bytes.append(UInt8(truncatingIfNeeded: utf8.count))
        bytes.append(contentsOf: utf8)
    }
}

/// Reads what `ByteWriter` wrote, with a bounds check on every read. Valid only inside the
/// closure that provided its buffer.
public struct ByteReader {
    let buffer: UnsafeBufferPointer<UInt8>
    private var offset = 0

    init(_ buffer: UnsafeBufferPointer<UInt8>) { self.buffer = buffer }

    public var isAtEnd: Bool { offset == buffer.count }

    public mutating func readByte() throws(SealedOpenError) -> UInt8 {
        guard offset < buffer.count else { throw .invalidPayload }
        defer { offset += 1 }
        return buffer[offset]
    }

    public mutating func readInt64() throws(SealedOpenError) -> Int64 {
        guard buffer.count - offset >= 8, let base = buffer.baseAddress else { throw .invalidPayload }
        let bits = UnsafeRawPointer(base).loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        offset += 8
        return Int64(bitPattern: UInt64(bigEndian: bits))
    }

    public mutating func readRaw(_ count: Int) throws(SealedOpenError) -> [UInt8] {
        guard count >= 0, buffer.count - offset >= count else { throw .invalidPayload }
        defer { offset += count }
        return Array(buffer[offset..<(offset + count)])
    }

    /// The index range of the next `count` bytes.
    mutating func readRange(_ count: Int) throws(SealedOpenError) -> Range<Int> {
        guard count >= 0, buffer.count - offset >= count else { throw .invalidPayload }
        defer { offset += count }
        return offset..<(offset + count)
    }

    /// A length-prefixed UTF-8 string of at most `maximumByteCount` bytes.
    public mutating func readString(wide: Bool, maximumByteCount: Int) throws(SealedOpenError) -> String {
        let range = try readStringRange(wide: wide, maximumByteCount: maximumByteCount)
        return String(decoding: UnsafeBufferPointer(rebasing: buffer[range]), as: UTF8.self)
    }

    /// The index range of a length-prefixed string of at most `maximumByteCount` bytes that
    /// is valid UTF-8.
    mutating func readStringRange(wide: Bool, maximumByteCount: Int) throws(SealedOpenError) -> Range<Int> {
        var count = Int(try readByte())
        if wide { count = count << 8 | Int(try readByte()) }
        guard count <= maximumByteCount else { throw .invalidPayload }
        let range = try readRange(count)
        guard Self.isValidUTF8(UnsafeBufferPointer(rebasing: buffer[range])) else { throw .invalidPayload }
        return range
    }

    /// ASCII (the subject, almost every email and token) is checked eight bytes at a time
    /// without allocating. Otherwise: decoding repairs invalid UTF-8, so the bytes come back
    /// unchanged only if they were valid; compared as contiguous memory, since the generic
    /// `elementsEqual` over the UTF-8 view costs thousands of instructions per session.
    static func isValidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var high: UInt64 = 0, index = 0
        let raw = UnsafeRawPointer(base)
        while index + 8 <= bytes.count {
            high |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < bytes.count {
            high |= UInt64(base[index])
            index += 1
        }
        if high & 0x8080_8080_8080_8080 == 0 { return true }
        let string = String(decoding: bytes, as: UTF8.self)
        return string.utf8.withContiguousStorageIfAvailable { decoded in equal(decoded, bytes) }
            ?? string.utf8.elementsEqual(bytes)
    }

    @inline(__always)
    private static func equal(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        guard var p = a.baseAddress, var q = b.baseAddress else { return true }
        let end = p + a.count
        while p < end {
            if p.pointee != q.pointee { return false }
            p += 1
            q += 1
        }
        return true
    }
}
