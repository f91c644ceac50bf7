/// Framing helpers for writing a chunked body.
public enum ChunkedEncoder {
    /// `0 CRLF CRLF`: the last chunk with no trailers.
    public static let lastChunk: [UInt8] = [0x30, 0x0D, 0x0A, 0x0D, 0x0A]
    /// The CRLF that follows each chunk's data.
    public static let chunkEnd: [UInt8] = [0x0D, 0x0A]

    /// Appends `<hex size> CRLF` (size > 0; a zero size is the last chunk, use `lastChunk`).
    public static func appendChunkHeader(size: Int, to out: inout [UInt8]) {
        withChunkHeader(size: size) { out.append(contentsOf: $0) }
    }

    /// Calls `body` with the bytes of `<hex size> CRLF`, built on the stack.
    public static func withChunkHeader<R>(size: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var digits = 1
        var v = UInt64(size) >> 4
        while v != 0 { digits += 1; v >>= 4 }
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 18) { buf in
            var value = UInt64(size)
            for i in stride(from: digits - 1, through: 0, by: -1) {
                buf[i] = HexDigit.upper(UInt8(value & 0xF))
                value >>= 4
            }
            buf[digits] = 0x0D
            buf[digits + 1] = 0x0A
            return try body(UnsafeRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(buf)[0..<(digits + 2)]))
        }
    }

    /// Appends one complete chunk (header, data, CRLF). Empty data appends nothing, since an
    /// empty chunk would end the body.
    public static func appendChunk(_ data: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        guard data.count > 0 else { return }
        appendChunkHeader(size: data.count, to: &out)
        out.append(contentsOf: data)
        out.append(contentsOf: chunkEnd)
    }
}
