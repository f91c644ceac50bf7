import CByteScan

/// Parses the field lines of a head whose bounds `HeadScanner` established, i.e. every LF in
/// `buf[..<end]` is preceded by CR and `buf[end-4..<end]` is CR LF CR LF.
enum FieldLines {
    /// Parses lines from `p` (the first byte after the start line's CRLF) and feeds each
    /// field to `semantics`.
    static func parse(
        _ buf: UnsafeRawBufferPointer, from p0: Int, end: Int, maxFields: Int,
        into fields: inout [HTTPField], semantics: inout FieldSemantics
    ) throws(HTTPHeadError) {
        let base = buf.baseAddress!
        var p = p0
        while true {
            let first = buf[p]
            if first == ASCII.cr {
                guard buf[p + 1] == ASCII.lf else { throw .bareCR }
                return  // the empty line that ends the head
            }
            if ASCII.isOWS(first) { throw .obsFold }
            let nameStart = p
            // The head ends in CRLF CRLF: both scans stop before `end`.
            p &+= sidecar_token_prefix(base + p, end &- p)
            let nameEnd = p
            let stop = buf[p]
            guard stop == ASCII.colon else {
                if nameEnd > nameStart, ASCII.isOWS(stop) {
                    while ASCII.isOWS(buf[p]) { p += 1 }
                    if buf[p] == ASCII.colon { throw .whitespaceBeforeColon }
                }
                throw .invalidFieldName
            }
            guard nameEnd > nameStart else { throw .invalidFieldName }
            p += 1
            while ASCII.isOWS(buf[p]) { p += 1 }
            let valueStart = p
            // The value with its inner whitespace, sixteen bytes at a time (long values such as
            // cookies, dates and user agents in one call); it ends before trailing OWS and the CR.
            p &+= sidecar_field_value_length(base + p, end &- p)
            guard buf[p] == ASCII.cr else { throw .controlCharacter }
            var valueEnd = p
            while valueEnd > valueStart, ASCII.isOWS(buf[valueEnd &- 1]) { valueEnd &-= 1 }
            guard buf[p + 1] == ASCII.lf else { throw .bareCR }
            p += 2
            guard fields.count < maxFields else { throw .tooManyFields }
            let field = HTTPField(
                name: ByteRange(start: nameStart, end: nameEnd),
                value: ByteRange(start: valueStart, end: valueEnd))
            fields.append(field)
            try semantics.observe(buf, nameStart: nameStart, nameEnd: nameEnd,
                                  valueStart: valueStart, valueEnd: valueEnd)
        }
    }
}
