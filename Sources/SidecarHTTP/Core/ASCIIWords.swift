/// Case folding of eight ASCII bytes at once (SWAR): the comparisons of header names with
/// known names run a word at a time instead of a byte at a time. Bytes from 0x80 pass
/// unchanged; no carry crosses a byte.
@usableFromInline enum ASCIIWords {
    @usableFromInline static let highs: UInt64 = 0x8080_8080_8080_8080
    @usableFromInline static let lows: UInt64 = 0x7F7F_7F7F_7F7F_7F7F

    /// `A`–`Z` → `a`–`z` in every byte.
    @inlinable @inline(__always) static func lowercased(_ w: UInt64) -> UInt64 {
        let low7 = w & lows
        let atLeastA = low7 &+ 0x3F3F_3F3F_3F3F_3F3F  // high bit: byte ≥ 0x41
        let pastZ = low7 &+ 0x2525_2525_2525_2525  // high bit: byte ≥ 0x5B
        let upper = atLeastA & ~pastZ & ~w & highs
        return w | (upper >> 2)
    }

    /// `lowercased`, and `_` → `-` (header names compared as `HeaderNameSet` folds them).
    @inlinable @inline(__always) static func folded(_ w: UInt64) -> UInt64 {
        let x = w ^ 0x5F5F_5F5F_5F5F_5F5F
        let underscore = ~(((x & lows) &+ lows) | x) & highs  // exact: high bit where a byte is `_`
        return lowercased(w) ^ ((underscore >> 7) &* (0x5F ^ 0x2D))
    }

    /// Whether `count` bytes at `a`, case folded (and with `_` → `-` if `underscore`), equal
    /// the bytes at `folded`. Words overlap at the end instead of reading past `count`.
    @inlinable @inline(__always) static func equal(
        _ a: UnsafeRawPointer, folding count: Int, to folded: UnsafeRawPointer, underscore: Bool
    ) -> Bool {
        @inline(__always) func fold(_ w: UInt64) -> UInt64 { underscore ? ASCIIWords.folded(w) : lowercased(w) }
        if count >= 8 {
            var i = 0
            while i &+ 8 < count {
                if fold(a.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                    != folded.loadUnaligned(fromByteOffset: i, as: UInt64.self) { return false }
                i &+= 8
            }
            return fold(a.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self))
                == folded.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
        }
        if count >= 4 {
            return fold(UInt64(a.loadUnaligned(as: UInt32.self))) == UInt64(folded.loadUnaligned(as: UInt32.self))
                && fold(UInt64(a.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self)))
                    == UInt64(folded.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self))
        }
        var i = 0
        while i < count {
            if fold(UInt64(a.load(fromByteOffset: i, as: UInt8.self))) != UInt64(folded.load(fromByteOffset: i, as: UInt8.self)) {
                return false
            }
            i &+= 1
        }
        return true
    }
}

/// Copies bytes with ASCII letters lowercased, eight at a time (HTTP/2 field names).
public enum ASCIILowercase {
    /// Copies `source` lowercased (ASCII letters only). A word at a time; the last word (or
    /// half word) overlaps the one before it rather than ending byte by byte: lowercasing a
    /// byte twice gives the same byte.
    @inlinable
    public static func copy(_ source: UnsafeRawBufferPointer, to destination: UnsafeMutableRawPointer) {
        guard let base = source.baseAddress else { return }
        let count = source.count
        if count >= 8 {
            var i = 0
            while i + 8 <= count {
                let word = ASCIIWords.lowercased(base.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                destination.storeBytes(of: word, toByteOffset: i, as: UInt64.self)
                i += 8
            }
            if i < count {
                let word = ASCIIWords.lowercased(base.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
                destination.storeBytes(of: word, toByteOffset: count - 8, as: UInt64.self)
            }
        } else if count >= 4 {
            // Two half words, overlapping when fewer than 8: zero-extended, the upper half of
            // the word lowercases nothing.
            let head = ASCIIWords.lowercased(UInt64(base.loadUnaligned(as: UInt32.self)))
            let tail = ASCIIWords.lowercased(UInt64(base.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)))
            destination.storeBytes(of: UInt32(truncatingIfNeeded: head), as: UInt32.self)
            destination.storeBytes(of: UInt32(truncatingIfNeeded: tail), toByteOffset: count - 4, as: UInt32.self)
        } else {
            for i in 0..<count {
                let c = source[i]
                destination.storeBytes(of: c &- 0x41 < 26 ? c | 0x20 : c, toByteOffset: i, as: UInt8.self)
            }
        }
    }
}
