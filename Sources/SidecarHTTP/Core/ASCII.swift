/// Byte classes of RFC 9110/9112, as branch-only functions (no tables, no allocation).
@usableFromInline enum ASCII {
    @usableFromInline static let cr: UInt8 = 0x0D
    @usableFromInline static let lf: UInt8 = 0x0A
    @usableFromInline static let sp: UInt8 = 0x20
    @usableFromInline static let htab: UInt8 = 0x09
    @usableFromInline static let colon: UInt8 = 0x3A
    @usableFromInline static let comma: UInt8 = 0x2C
    @usableFromInline static let slash: UInt8 = 0x2F
    @usableFromInline static let semicolon: UInt8 = 0x3B
    @usableFromInline static let percent: UInt8 = 0x25
    @usableFromInline static let dash: UInt8 = 0x2D

    /// tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
    /// As a 128-bit set (two constant words): a shift and a test per byte in the name loops.
    @inlinable @inline(__always) static func isTokenChar(_ c: UInt8) -> Bool {
        let word: UInt64 = c < 64 ? 0x03FF_6CFA_0000_0000 : 0x57FF_FFFF_C7FF_FFFE
        return c < 128 && (word >> UInt64(c & 63)) & 1 != 0
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
    @inlinable @inline(__always) static func hexValue(_ c: UInt8) -> UInt8? { HexDigit.value(c) }
}
