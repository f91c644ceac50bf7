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
            while ASCII.isTokenChar(buf[p]) { p &+= 1 }  // the head ends in CRLF CRLF: no overrun
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
            // Runs of field-vchar / obs-text bytes, sixteen at a time (long values such as
            // cookies), with OWS between them; the value ends before trailing OWS and the CR.
            var valueEnd = p
            while true {
                let run = sidecar_visible_prefix(base + p, end &- p)
                if run > 0 {
                    p &+= run
                    valueEnd = p
                }
                let c = buf[p]
                if ASCII.isOWS(c) {
                    p &+= 1
                } else if c == ASCII.cr {
                    break
                } else {
                    throw .controlCharacter
                }
            }
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
