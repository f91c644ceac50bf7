#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// Finds where a head ends (the first empty line) in one pass, refusing a bare LF on the way.
@usableFromInline enum HeadScanner {
    /// `start`: first byte of the start line; `end`: one past the final CRLF CRLF.
    @usableFromInline struct Bounds {
        var start: Int
        var end: Int
    }

    /// nil when the head is not complete yet and may still fit in `maxBytes`.
    static func find(
        in buf: UnsafeRawBufferPointer, maxBytes: Int, skipLeadingEmptyLines: Bool
    ) throws(HTTPHeadError) -> Bounds? {
        let limit = min(buf.count, maxBytes)
        var start = 0
        if skipLeadingEmptyLines {
            // RFC 9112 §2.2: a server SHOULD ignore empty lines before the request line.
            while start < limit, buf[start] == ASCII.cr {
                guard start + 1 < limit else { break }
                guard buf[start + 1] == ASCII.lf else { throw .bareCR }
                start += 2
            }
        }
        var i = start
        if let base = buf.baseAddress {
            // Line by line: memchr finds each LF far faster than a byte loop.
            while i < limit, let hit = memchr(base + i, Int32(ASCII.lf), limit - i) {
                i = base.distance(to: UnsafeRawPointer(hit))
                guard i > start, buf[i - 1] == ASCII.cr else { throw .bareLF }
                // The line just ended is empty when the LF before its CR ends the previous line.
                if i - 2 >= start, buf[i - 2] == ASCII.lf {
                    return Bounds(start: start, end: i + 1)
                }
                i += 1
            }
        }
        if buf.count >= maxBytes { throw .headTooLarge }
        return nil
    }
}
