/// Percent-encoding (RFC 3986 §2.1), written once for every module: identity names, login
/// targets, form bodies, request targets sent to Apple and normalized paths all escape bytes
/// the same way, as `%XX` with upper-case digits.
public enum PercentEncoding {
    /// `A-Z a-z 0-9 - . _ ~` (RFC 3986 unreserved): the bytes no context needs escaped.
    @inlinable @inline(__always) public static func isUnreserved(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E: return true
        default: return false
        }
    }

    /// Appends `%XX` for `b`.
    @inlinable @inline(__always) public static func appendEscape(_ b: UInt8, to out: inout [UInt8]) {
        out.append(ASCII.percent)
        out.append(HexDigit.upper(b >> 4))
        out.append(HexDigit.upper(b & 0xF))
    }

    /// Appends `bytes` with every byte outside the unreserved set escaped; `keepingSlashes`
    /// leaves `/` as it is (a path carried inside a query component).
    @inlinable public static func append(
        _ bytes: some Sequence<UInt8>, keepingSlashes: Bool = false, into out: inout [UInt8]
    ) {
        for b in bytes {
            if isUnreserved(b) || (keepingSlashes && b == ASCII.slash) {
                out.append(b)
            } else {
                appendEscape(b, to: &out)
            }
        }
    }

    /// The length of `bytes` once encoded by `append(_:into:)`.
    @inlinable public static func encodedCount(_ bytes: some Sequence<UInt8>) -> Int {
        var count = 0
        for b in bytes { count += isUnreserved(b) ? 1 : 3 }
        return count
    }

    /// `text` with every byte outside the unreserved set escaped.
    public static func encode(_ text: String) -> String {
        var out: [UInt8] = []
        append(text.utf8, into: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
