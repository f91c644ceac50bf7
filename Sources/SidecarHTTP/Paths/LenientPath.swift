/// The lenient reading of a normalized path: how the most forgiving common upstream reads
/// it. Each segment loses its `;parameters` (Tomcat, Jetty, Spring), then its trailing dots
/// and spaces (IIS, Windows file names), and letters are folded to lower case (Express's
/// default router, ASP.NET, case-insensitive file systems). A restriction holds only if it
/// holds for the normalized path and for this reading (SPEC §4.3, "the strictest reading
/// wins"); the path is still forwarded in its normalized form.
///
/// `PathNormalizer` has already refused every segment this reading would empty, so each
/// non-empty segment stays non-empty.
public enum LenientPath {
    /// Appends the lenient reading of the normalized `path` to `out`.
    public static func append(_ path: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        let n = path.count
        // Never longer than the path: written in place, without a uniqueness check per byte.
        let base = out.count
        out.append(contentsOf: repeatElement(0, count: n))
        let written = out.withUnsafeMutableBufferPointer { buffer -> Int in
            var w = base
            var i = 0
            while i < n {
                // One segment: [i, end), its kept part [i, cut).
                var end = i
                while end < n, path[end] != ASCII.slash { end += 1 }
                var cut = i
                while cut < end, path[cut] != ASCII.semicolon { cut += 1 }
                let kept = trimmedEnd(path, start: i, end: cut)
                var j = i
                while j < kept {
                    let c = path[j]
                    buffer[w] = c >= 0x41 && c <= 0x5A ? c | 0x20 : c
                    w += 1
                    j += 1
                }
                if end < n {
                    buffer[w] = ASCII.slash
                    w += 1
                }
                i = end + 1
            }
            return w
        }
        out.removeSubrange(written...)
    }

    /// Whether the lenient reading of `path` is `path` itself: no `;`, no upper-case letter,
    /// no segment ending in a dot or a space. Most paths are; their one reading suffices.
    public static func isSame(_ path: UnsafeRawBufferPointer) -> Bool {
        let n = path.count
        var i = 0
        while i < n {
            let c = path[i]
            if c == ASCII.semicolon || (c >= 0x41 && c <= 0x5A) { return false }
            if c == 0x2E || c == 0x30, i + 1 == n || path[i + 1] == ASCII.slash {
                // `.` before a `/` or the end, or the `0` of a `%20` there.
                if c == 0x2E || (i >= 2 && path[i - 1] == 0x32 && path[i - 2] == ASCII.percent) { return false }
            }
            i += 1
        }
        return true
    }

    /// The end of `bytes[start..<end]` once trailing dots and `%20`s are cut.
    @inline(__always)
    static func trimmedEnd<C: RandomAccessCollection>(_ bytes: C, start: Int, end: Int) -> Int
    where C.Element == UInt8, C.Index == Int {
        var e = end
        while e > start {
            if bytes[e - 1] == 0x2E {
                e -= 1
            } else if e - start >= 3, bytes[e - 1] == 0x30, bytes[e - 2] == 0x32, bytes[e - 3] == ASCII.percent {
                e -= 3
            } else {
                break
            }
        }
        return e
    }
}
