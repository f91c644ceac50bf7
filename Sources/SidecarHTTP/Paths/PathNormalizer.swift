/// Why a request path was refused (answer 400).
public enum PathNormalizationError: Error, Sendable, Hashable {
    /// `%` not followed by two hex digits (`%zz`, `%2`).
    case invalidEscape
    /// The path does not start with `/`.
    case notAbsolute
    /// A segment that is `.` or `..` once its `;parameters` are cut off (`..;`, `.;x`, also
    /// from `%2e%2e;`): Tomcat, Jetty and Spring cut them and then resolve the dot segment,
    /// so `/public/..;/admin` would reach `/admin` behind a decision made on another path.
    case dotSegmentWithParameters
}

/// Path normalization: the form access decisions are made on and that is
/// forwarded. Percent-encoded unreserved characters are decoded (`%2e` → `.`, `%7E` → `~`),
/// other escapes are kept with upper-case hex (`%2f` → `%2F`, still not a separator), bytes
/// that may not appear raw in a path are percent-encoded, and dot segments are removed
/// (RFC 3986 §5.2.4) after decoding. The query is not part of the input.
public enum PathNormalizer {
    /// Appends the normalized form of `path` to `out`. An empty path (absolute-form target
    /// without a path) normalizes to `/`.
    public static func normalize(
        _ path: UnsafeRawBufferPointer, into out: inout [UInt8]
    ) throws(PathNormalizationError) {
        let n = path.count
        let base = out.count
        out.append(ASCII.slash)
        guard n > 0 else { return }
        guard path[0] == ASCII.slash else {
            out.removeLast()
            throw .notAbsolute
        }
        var segmentStart = base  // index of the '/' that opens the current segment
        var i = 1
        while i < n {
            let c = path[i]
            if c == ASCII.slash {
                try endSegment(&out, base: base, segmentStart: segmentStart, isLast: false)
                out.append(ASCII.slash)
                segmentStart = out.count - 1
                i += 1
            } else if c == ASCII.percent {
                guard i + 2 < n, let hi = ASCII.hexValue(path[i + 1]), let lo = ASCII.hexValue(path[i + 2])
                else {
                    out.removeSubrange(base...)
                    throw .invalidEscape
                }
                let v = hi << 4 | lo
                if PercentEncoding.isUnreserved(v) {
                    out.append(v)
                } else {
                    PercentEncoding.appendEscape(v, to: &out)
                }
                i += 3
            } else {
                if isPathChar(c) { out.append(c) } else { PercentEncoding.appendEscape(c, to: &out) }
                i += 1
            }
        }
        try endSegment(&out, base: base, segmentStart: segmentStart, isLast: true)
    }

    /// Normalized form of a path given as text (configuration, tests).
    public static func normalize(_ path: String) throws(PathNormalizationError) -> String {
        var out: [UInt8] = []
        var s = path
        let result = s.withUTF8 { buf in
            Result { () throws(PathNormalizationError) in
                try normalize(UnsafeRawBufferPointer(buf), into: &out)
            }
        }
        try result.get()
        return String(decoding: out, as: UTF8.self)
    }

    /// Removes the segment after `segmentStart` if it is `.` or `..` (with its parent); refuses
    /// one that is `.` or `..` followed by `;parameters`.
    private static func endSegment(
        _ out: inout [UInt8], base: Int, segmentStart: Int, isLast: Bool
    ) throws(PathNormalizationError) {
        let length = out.count - segmentStart - 1
        guard length >= 1, out[segmentStart + 1] == 0x2E else { return }  // only dot segments matter
        let dots = length >= 2 && out[segmentStart + 2] == 0x2E ? 2 : 1
        if length > dots {
            guard out[segmentStart + 1 + dots] == ASCII.semicolon else { return }
            out.removeSubrange(base...)
            throw .dotSegmentWithParameters
        }
        out.removeSubrange(segmentStart...)
        if dots == 2 {
            var p = out.count - 1
            while p >= base, out[p] != ASCII.slash { p -= 1 }
            if p >= base { out.removeSubrange(p...) }
        }
        // The removed segment leaves the path ending in a directory: "/a/." is "/a/".
        if isLast { out.append(ASCII.slash) }
    }

    /// pchar without `%` (unreserved, sub-delims, `:`, `@`).
    @inline(__always) static func isPathChar(_ c: UInt8) -> Bool {
        switch c {
        case 0x21, 0x24, 0x26...0x2C, 0x3A, 0x3B, 0x3D, 0x40: return true
        default: return PercentEncoding.isUnreserved(c)
        }
    }
}
