import SidecarCrypto

/// 128 bits that name a session (its random id) or a single-use key.
///
/// Two integers instead of `[UInt8]`: hashing and comparing them is two word operations and
/// no heap object, which matters in the dictionaries the request path looks into.
public struct Key128: Hashable, Sendable, CustomStringConvertible {
    public static let byteCount = 16

    /// The first 8 bytes, read little-endian.
    public let high: UInt64
    /// The last 8 bytes, read little-endian.
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The key for `bytes`: exactly 16 bytes (a session id, a digest) are taken as they are;
    /// anything else is SHA-256'd and the digest's first 16 bytes are used, so a long login
    /// state or `jti` costs the same 16 bytes in memory and on disk as a session id.
    public init(_ bytes: UnsafeRawBufferPointer) {
        if bytes.count == Self.byteCount {
            self.init(exactly: bytes)
        } else {
            let digest = SHA256.hash(bytes)
            self = digest.withUnsafeBytes { Key128(exactly: UnsafeRawBufferPointer(rebasing: $0[0..<Self.byteCount])) }
        }
    }

    public init(_ bytes: [UInt8]) {
        self = bytes.withUnsafeBytes { Key128($0) }
    }

    /// Two unaligned loads; `bytes` must hold exactly 16 bytes.
    @inline(__always)
    init(exactly bytes: UnsafeRawBufferPointer) {
        high = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        low = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
    }

    /// The 16 bytes (for the log): `init(_:)` of these gives back this key.
    var bytes: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(Self.byteCount)
        withUnsafeBytes(of: high.littleEndian) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: low.littleEndian) { out.append(contentsOf: $0) }
        return out
    }

    /// All 16 bytes in lowercase hex: how a shared store names the key.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(32)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The key whose `hex` is `text`; nil for anything else.
    public init?(hex text: [UInt8]) {
        guard text.count == 32 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(16)
        var index = 0
        while index < 32 {
            guard let high = Self.nibble(text[index]), let low = Self.nibble(text[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.init(bytes)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }

    /// Hex of the first 4 bytes only: enough to tell keys apart in a log line without
    /// printing a session id (a bearer of nothing, but still not for logs).
    public var description: String {
        // Bytes 0...3 are the low half of `high` (little-endian); swapped, they print in order.
        let hex = String(UInt32(truncatingIfNeeded: high).byteSwapped, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex + "…"
    }
}
