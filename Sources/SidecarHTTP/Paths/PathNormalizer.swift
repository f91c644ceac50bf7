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
    /// A segment that is nothing once its `;parameters`, trailing dots and trailing spaces
    /// are cut (`;x`, `...`, `..%20`): IIS and Windows trim dots and spaces, servlet
    /// containers cut parameters, and what is left is an empty or a dot segment to them.
    case segmentEmptyOnceCut
    /// `%2F`, `%5C` or a raw `\` with `paths.encoded_slashes: reject`: many upstreams
    /// (WSGI, PHP, IIS, Tomcat with `ALLOW_BACKSLASH`) decode them into separators.
    case encodedSeparator
}

/// What `%2F`, `%5C` and a raw `\` in a path mean (`paths.encoded_slashes`).
public enum EncodedSeparators: String, Sendable, Hashable, CaseIterable {
    /// Refused with 400 before any decision: the only choice safe in front of every upstream.
    case reject
    /// Taken for `/`, then normalized like one: the decision and the forwarded path agree.
    case decode
    /// Kept escaped (`%2F`, `%5C`), not a separator to the decision: unsafe in front of an
    /// upstream that decodes them.
    case keep
}

/// Path normalization: the form access decisions are made on and that is forwarded.
/// Percent-encoded unreserved characters are decoded (`%2e` → `.`, `%7E` → `~`), other
/// escapes are kept with upper-case hex, bytes that may not appear raw in a path are
/// percent-encoded, empty segments are merged (`//a` → `/a`), and dot segments are removed
/// (RFC 3986 §5.2.4) after decoding. Encoded separators follow `EncodedSeparators`. The query
/// is not part of the input. `LenientPath` gives the other readings decisions must also hold for.
public enum PathNormalizer {
    /// Appends the normalized form of `path` to `out`. An empty path (absolute-form target
    /// without a path) normalizes to `/`. On failure `out` is as it was. `mergingEmptySegments`
    /// false keeps `//` (for a redirect target, which a browser resolves, not an upstream).
    public static func normalize(
        _ path: UnsafeRawBufferPointer, separators: EncodedSeparators = .reject, mergingEmptySegments: Bool = true,
        into out: inout [UInt8]
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
        var hasSemicolon = false  // in the current segment
        var i = 1
        while i < n {
            var c = path[i]
            // The common byte first: a pchar that is neither `%` nor a separator.
            if c != ASCII.percent && c != ASCII.slash && c != backslash {
                if isPathChar(c) {
                    out.append(c)
                    if c == ASCII.semicolon { hasSemicolon = true }
                } else {
                    PercentEncoding.appendEscape(c, to: &out)
                }
                i += 1
                continue
            }
            var width = 1
            if c == ASCII.percent {
                guard i + 2 < n, let hi = ASCII.hexValue(path[i + 1]), let lo = ASCII.hexValue(path[i + 2]) else {
                    out.removeSubrange(base...)
                    throw .invalidEscape
                }
                c = hi << 4 | lo
                width = 3
                if c != ASCII.slash && c != backslash {
                    if PercentEncoding.isUnreserved(c) { out.append(c) } else { PercentEncoding.appendEscape(c, to: &out) }
                    i += 3
                    continue
                }
            }
            if c == backslash || width == 3 {
                switch separators {
                case .reject:
                    out.removeSubrange(base...)
                    throw .encodedSeparator
                case .decode:
                    break
                case .keep:
                    PercentEncoding.appendEscape(c, to: &out)
                    i += width
                    continue
                }
            }
            // A separator. An empty segment (`//`) is merged: nothing is appended.
            if out.count - 1 != segmentStart || !mergingEmptySegments {
                do throws(PathNormalizationError) {
                    try endSegment(&out, base: base, segmentStart: segmentStart, hasSemicolon: hasSemicolon, isLast: false)
                } catch {
                    out.removeSubrange(base...)
                    throw error
                }
                out.append(ASCII.slash)
                segmentStart = out.count - 1
                hasSemicolon = false
            }
            i += width
        }
        do throws(PathNormalizationError) {
            try endSegment(&out, base: base, segmentStart: segmentStart, hasSemicolon: hasSemicolon, isLast: true)
        } catch {
            out.removeSubrange(base...)
            throw error
        }
    }

    /// Normalized form of a path given as text (configuration, tests).
    public static func normalize(
        _ path: String, separators: EncodedSeparators = .reject
    ) throws(PathNormalizationError) -> String {
        var out: [UInt8] = []
        var s = path
        let result = s.withUTF8 { buf in
            Result { () throws(PathNormalizationError) in
                try normalize(UnsafeRawBufferPointer(buf), separators: separators, into: &out)
            }
        }
        try result.get()
        return String(decoding: out, as: UTF8.self)
    }

    private static let backslash: UInt8 = 0x5C

    /// Removes the segment after `segmentStart` if it is `.` or `..` (with its parent); refuses
    /// one that some upstream reads as empty or as a dot segment (`..;`, `...`, `;x`).
    private static func endSegment(
        _ out: inout [UInt8], base: Int, segmentStart: Int, hasSemicolon: Bool, isLast: Bool
    ) throws(PathNormalizationError) {
        let start = segmentStart + 1
        let length = out.count - start
        guard length >= 1 else { return }
        let last = out[out.count - 1]
        // Only a segment with `;`, or ending in a dot or in `%20`, can be cut to nothing.
        guard hasSemicolon || last == 0x2E || last == 0x30 else { return }
        let plainDots = length <= 2 && out[start] == 0x2E && last == 0x2E
        guard plainDots else {
            // What a servlet container or IIS keeps of the segment: up to its first `;`,
            // less trailing dots and spaces.
            var end = start
            while end < out.count, out[end] != ASCII.semicolon { end += 1 }
            let core = LenientPath.trimmedEnd(out, start: start, end: end)
            guard core == start else { return }
            let dots = end - start
            if dots >= 1, dots <= 2, end < out.count, out[start] == 0x2E, out[end - 1] == 0x2E {
                throw .dotSegmentWithParameters
            }
            throw .segmentEmptyOnceCut
        }
        out.removeSubrange(segmentStart...)
        if length == 2 {
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
