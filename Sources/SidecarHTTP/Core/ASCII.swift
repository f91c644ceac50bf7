/// Byte classes of RFC 9110/9112, as branch-only functions (no tables, no allocation).
@usableFromInline enum ASCII {
    @usableFromInline static let cr: UInt8 = 0x0D
    @usableFromInline static let lf: UInt8 = 0x0A
    @usableFromInline static let sp: UInt8 = 0x20
    @usableFromInline static let htab: UInt8 = 0x09
    @usableFromInline static let colon: UInt8 = 0x3A
    @usableFromInline static let comma: UInt8 = 0x2C
    @usableFromInline static let slash: UInt8 = 0x2F
    @usableFromInline static let percent: UInt8 = 0x25

    /// tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
    @inlinable @inline(__always) static func isTokenChar(_ c: UInt8) -> Bool {
        switch c {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E:
            return true
        default: return false
        }
    }

    /// field-vchar / SP / HTAB (obs-text allowed, as RFC 9110 §5.5 permits).
    @inlinable @inline(__always) static func isFieldValueChar(_ c: UInt8) -> Bool {
        c == htab || (c >= 0x20 && c != 0x7F)
    }

    @inlinable @inline(__always) static func isOWS(_ c: UInt8) -> Bool { c == sp || c == htab }

    @inlinable @inline(__always) static func isDigit(_ c: UInt8) -> Bool { c &- 0x30 < 10 }

    @inlinable @inline(__always) static func lower(_ c: UInt8) -> UInt8 {
        c &- 0x41 < 26 ? c | 0x20 : c
    }

    /// Value of a hex digit, or nil.
    @inlinable @inline(__always) static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c &- 0x30
        case 0x41...0x46: return c &- 0x41 &+ 10
        case 0x61...0x66: return c &- 0x61 &+ 10
        default: return nil
        }
    }

    @inlinable @inline(__always) static func upperHexDigit(_ v: UInt8) -> UInt8 {
        v < 10 ? 0x30 &+ v : 0x41 &+ v &- 10
    }
}
