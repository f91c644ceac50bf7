/// Parses the field lines of a head whose bounds `HeadScanner` established, i.e. every LF in
/// `buf[..<end]` is preceded by CR and `buf[end-4..<end]` is CR LF CR LF.
enum FieldLines {
    /// Parses lines from `p` (the first byte after the start line's CRLF) and feeds each
    /// field to `semantics`.
    static func parse(
        _ buf: UnsafeRawBufferPointer, from p0: Int, end: Int, maxFields: Int,
        into fields: inout [HTTPField], semantics: inout FieldSemantics
    ) throws(HTTPHeadError) {
        var p = p0
        while true {
            let first = buf[p]
            if first == ASCII.cr {
                guard buf[p + 1] == ASCII.lf else { throw .bareCR }
                return  // the empty line that ends the head
            }
            if ASCII.isOWS(first) { throw .obsFold }
            let nameStart = p
            while ASCII.isTokenChar(buf[p]) { p += 1 }
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
            // Eight bytes at a time while they are all field-vchar or obs-text (long values
            // such as cookies); the byte loop below takes the rest and the edge cases.
            while p + 8 <= end, Self.isVisible(buf.loadUnaligned(fromByteOffset: p, as: UInt64.self)) {
                p += 8
            }
            var valueEnd = p  // the last byte taken above, if any, is not OWS
            while true {
                let c = buf[p]
                if c > ASCII.sp && c != 0x7F {  // field-vchar or obs-text: the common case
                    p += 1
                    valueEnd = p
                } else if ASCII.isOWS(c) {
                    p += 1
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

    /// No byte of `w` is below 0x21 (controls, SP) or 0x7F; bytes from 0x80 (obs-text) pass.
    /// The "has less than" / "has zero" word tricks: exact about whether such a byte exists.
    @inline(__always) static func isVisible(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let belowBang = (w &- ones &* 0x21) & ~w & highs
        let del = w ^ (ones &* 0x7F)
        let hasDel = (del &- ones) & ~del & highs
        return belowBang | hasDel == 0
    }
}
