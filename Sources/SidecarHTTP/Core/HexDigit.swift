/// Hexadecimal digits, written once for every module: percent-encoding, chunk sizes, request
/// ids, log escapes and form decoding all read and write them the same way.
public enum HexDigit {
    /// The value of an ASCII hex digit (either case), or nil.
    @inlinable @inline(__always) public static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c &- 0x30
        case 0x41...0x46: return c &- 0x41 &+ 10
        case 0x61...0x66: return c &- 0x61 &+ 10
        default: return nil
        }
    }

    /// `0`–`9`, `A`–`F` for a value below 16 (percent-encoding's preferred case).
    @inlinable @inline(__always) public static func upper(_ v: UInt8) -> UInt8 {
        v < 10 ? 0x30 &+ v : 0x41 &+ v &- 10
    }

    /// `0`–`9`, `a`–`f` for a value below 16.
    @inlinable @inline(__always) public static func lower(_ v: UInt8) -> UInt8 {
        v < 10 ? 0x30 &+ v : 0x61 &+ v &- 10
    }
}
