/// Which field lines of a parsed head a proxy passes on: everything except hop-by-hop fields
/// (Connection and the names it lists, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade,
/// Proxy-*) and the names in `dropping` (case-insensitive, `_` ≡ `-`); Content-Length once,
/// in canonical form; Host even if Connection lists it; with `keepUpgrade` (a validated
/// upgrade) the Upgrade field too.
///
/// Kept lines leave as the byte spans they arrived in — one span per run of consecutive kept
/// lines — because the parser already proved each line `name ":" OWS value OWS CRLF` and the
/// lines contiguous up to the head's final CRLF. Only a non-canonical Content-Length
/// (`010`, `5, 5`) is rewritten.
enum ForwardedFields {
    /// Calls `emit` with the spans to write, in order. Returns whether an Upgrade field was
    /// kept (the writer then adds `Connection: upgrade`). `buf` is the head's whole storage.
    @inline(__always)
    static func forEach(
        _ buf: UnsafeRawBufferPointer, _ fields: UnsafeBufferPointer<HTTPField>, dropping: HeaderNameSet,
        keepUpgrade: Bool, _ emit: (UnsafeRawBufferPointer) -> Void
    ) -> Bool {
        let hopByHop = HeaderNameSet.hopByHop
        let dropsMore = !dropping.isEmpty
        // Connection options other than keep-alive and upgrade (both hop-by-hop names anyway)
        // name further fields to drop; only then is every field checked against them.
        var listsOtherNames = false
        for field in fields where ByteCompare.equalsLowercased(buf, field.name, "connection") {
            Tokens.forEach(in: buf, Int(field.value.start), Int(field.value.end)) { s, e in
                if !ByteCompare.equalsLowercased(buf, s, e, "keep-alive"),
                   !ByteCompare.equalsLowercased(buf, s, e, "upgrade") {
                    listsOtherNames = true
                }
            }
        }
        var runStart = -1
        var wroteContentLength = false
        var wroteUpgrade = false
        for field in fields {
            let lineStart = Int(field.name.start)
            let name = UnsafeRawBufferPointer(rebasing: buf[field.name.range])
            var keep = true
            var canonicalLength: Range<Int>?
            if ByteCompare.equalsLowercased(buf, field.name, "content-length") {
                if wroteContentLength {
                    keep = false
                } else {
                    wroteContentLength = true
                    let digits = canonicalDigits(buf, field.value)
                    if digits != field.value.range {
                        keep = false
                        canonicalLength = digits
                    }
                }
            } else if keepUpgrade, ByteCompare.equalsLowercased(buf, field.name, "upgrade") {
                wroteUpgrade = true
            } else if hopByHop.contains(name) || (dropsMore && dropping.contains(name)) {
                keep = false
            } else if listsOtherNames, isListedInConnection(name, fields: fields, buf: buf),
                      !ByteCompare.equalsLowercased(buf, field.name, "host") {
                keep = false  // `Connection: host` must not strip the upstream's Host
            }
            if keep {
                if runStart < 0 { runStart = lineStart }
                continue
            }
            if runStart >= 0 {
                emit(UnsafeRawBufferPointer(rebasing: buf[runStart..<lineStart]))
                runStart = -1
            }
            if let digits = canonicalLength {
                emit(UnsafeRawBufferPointer(staticString: "Content-Length: "))
                emit(UnsafeRawBufferPointer(rebasing: buf[digits]))
                emit(UnsafeRawBufferPointer(staticString: "\r\n"))
            }
        }
        if runStart >= 0 {
            emit(UnsafeRawBufferPointer(rebasing: buf[runStart..<(buf.count - 2)]))  // up to the final CRLF
        }
        return wroteUpgrade
    }

    /// The value's first run of digits without leading zeros (a reader must not be able to
    /// take `010` for octal); the parser proved all values of the field equal.
    private static func canonicalDigits(_ buf: UnsafeRawBufferPointer, _ value: ByteRange) -> Range<Int> {
        var p = Int(value.start)
        let end = Int(value.end)
        while p + 1 < end, buf[p] == 0x30, ASCII.isDigit(buf[p + 1]) { p += 1 }
        var e = p
        while e < end, ASCII.isDigit(buf[e]) { e += 1 }
        return p..<e
    }

    private static func isListedInConnection(
        _ name: UnsafeRawBufferPointer, fields: UnsafeBufferPointer<HTTPField>, buf: UnsafeRawBufferPointer
    ) -> Bool {
        for field in fields where ByteCompare.equalsLowercased(buf, field.name, "connection") {
            var listed = false
            Tokens.forEach(in: buf, Int(field.value.start), Int(field.value.end)) { s, e in
                guard e - s == name.count, !listed else { return }
                var i = 0
                while i < name.count, HeaderNameSet.fold(name[i]) == HeaderNameSet.fold(buf[s + i]) { i += 1 }
                listed = i == name.count
            }
            if listed { return true }
        }
        return false
    }
}

extension UnsafeRawBufferPointer {
    @inline(__always) init(staticString s: StaticString) {
        self.init(start: s.utf8Start, count: s.utf8CodeUnitCount)
    }
}
