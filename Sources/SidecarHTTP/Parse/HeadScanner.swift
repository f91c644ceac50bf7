import CByteScan

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
        if let base = buf.baseAddress, start < limit {
            let end = sidecar_head_end(base.assumingMemoryBound(to: UInt8.self), start, limit)
            if end < 0 { throw .bareLF }
            if end > 0 { return Bounds(start: start, end: end) }
        }
        if buf.count >= maxBytes { throw .headTooLarge }
        return nil
    }
}
