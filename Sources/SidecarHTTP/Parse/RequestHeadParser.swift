/// Parses the request line and the fields of a head whose bounds are known.
struct RequestHeadParser {
    let buf: UnsafeRawBufferPointer
    let bounds: HeadScanner.Bounds
    let limits: HTTPHeadLimits

    init(_ buf: UnsafeRawBufferPointer, _ bounds: HeadScanner.Bounds, _ limits: HTTPHeadLimits) {
        self.buf = buf
        self.bounds = bounds
        self.limits = limits
    }

    /// Offsets in the result are relative to byte 0 of `buf` (leading empty lines included
    /// in `storage`), so `storage.count` is the number of bytes consumed.
    func parse(reusing arrays: inout HeadArrays) throws(HTTPHeadError) -> HTTPRequestHead {
        var p = bounds.start
        // method SP
        let methodStart = p
        while ASCII.isTokenChar(buf[p]) { p += 1 }
        guard p > methodStart, buf[p] == ASCII.sp else { throw try lineError(at: p) }
        let methodEnd = p
        let method = HTTPMethod.classify(buf, methodStart, methodEnd)
        p += 1
        // request-target SP: visible ASCII only
        let targetStart = p
        while buf[p] > 0x20 && buf[p] < 0x7F { p += 1 }
        guard p > targetStart, buf[p] == ASCII.sp else { throw try lineError(at: p) }
        let targetEnd = p
        p += 1
        let version = try StartLine.version(buf, at: p, malformed: .malformedRequestLine)
        p += 8
        guard buf[p] == ASCII.cr else { throw try lineError(at: p) }
        guard buf[p + 1] == ASCII.lf else { throw .bareCR }
        p += 2

        if method == .connect { throw .connectNotAllowed }
        let target = try TargetParts.split(buf, targetStart, targetEnd, method: method)

        var (storage, fields) = arrays.take(UnsafeRawBufferPointer(rebasing: buf[0..<bounds.end]), fieldCapacity: 16)
        var semantics = FieldSemantics()
        try FieldLines.parse(
            buf, from: p, end: bounds.end, maxFields: limits.maxFields,
            into: &fields, semantics: &semantics)
        if semantics.hostCount > 1 { throw .multipleHost }
        if semantics.hostCount == 0 && version == .http11 { throw .missingHost }
        let framing = try semantics.explicitFraming(version: version) ?? BodyFraming.none
        let connection = ConnectionSemantics(
            keepAlive: semantics.keepAlive(version: version),
            upgrade: version == .http11 && semantics.connectionUpgrade && semantics.hasUpgradeField,
            expectContinue: version == .http11 && semantics.expectContinue,
            listsFieldNames: semantics.connectionListsOthers)
        return HTTPRequestHead(
            storage: storage, fields: fields, method: method,
            methodRange: ByteRange(start: methodStart, end: methodEnd),
            target: ByteRange(start: targetStart, end: targetEnd), targetForm: target.form,
            path: target.path, query: target.query, authority: target.authority,
            version: version, host: semantics.host, framing: framing, connection: connection)
    }

    /// The error for an unexpected byte in the request line.
    private func lineError(at p: Int) throws(HTTPHeadError) -> HTTPHeadError {
        let c = buf[p]
        if c == ASCII.cr, buf[p + 1] != ASCII.lf { return .bareCR }
        if c < 0x20 && c != ASCII.cr || c == 0x7F { return .controlCharacter }
        return .malformedRequestLine
    }
}

enum StartLine {
    /// `HTTP/1.1` or `HTTP/1.0` at `p` (8 bytes, all before the head's end).
    static func version(
        _ buf: UnsafeRawBufferPointer, at p: Int, malformed: HTTPHeadError
    ) throws(HTTPHeadError) -> HTTPVersion {
        // Every byte is checked before the next is read: a CR stops the match, and the head's
        // final CRLF CRLF keeps each read in bounds.
        let prefix: StaticString = "HTTP/"
        for i in 0..<5 where buf[p + i] != prefix.utf8Start[i] { throw malformed }
        let major = buf[p + 5]
        guard ASCII.isDigit(major), buf[p + 6] == 0x2E else { throw malformed }
        let minor = buf[p + 7]
        guard ASCII.isDigit(minor) else { throw malformed }
        if major == 0x31 && minor == 0x31 { return .http11 }
        if major == 0x31 && minor == 0x30 { return .http10 }
        throw .unsupportedVersion
    }
}

/// Splits a request-target into its form, path, query and authority.
enum TargetParts {
    struct Parts {
        var form: RequestTargetForm
        var path: ByteRange
        var query: ByteRange?
        var authority: ByteRange?
    }

    static func split(
        _ buf: UnsafeRawBufferPointer, _ start: Int, _ end: Int, method: HTTPMethod
    ) throws(HTTPHeadError) -> Parts {
        for i in start..<end where buf[i] == 0x23 { throw .invalidTarget }  // '#': no fragments
        let first = buf[start]
        if first == ASCII.slash {
            return pathAndQuery(buf, start, end, form: .origin, authority: nil)
        }
        if first == 0x2A {  // '*'
            guard end - start == 1, method == .options else { throw .invalidTarget }
            return Parts(form: .asterisk, path: ByteRange(start: start, end: start), query: nil)
        }
        var schemeEnd = start
        while schemeEnd < end, buf[schemeEnd] != ASCII.colon { schemeEnd += 1 }
        guard ByteCompare.equalsLowercased(buf, start, schemeEnd, "http")
                || ByteCompare.equalsLowercased(buf, start, schemeEnd, "https"),
              end - schemeEnd > 3, buf[schemeEnd + 1] == ASCII.slash, buf[schemeEnd + 2] == ASCII.slash
        else { throw .invalidTarget }
        let authorityStart = schemeEnd + 3
        var p = authorityStart
        while p < end, buf[p] != ASCII.slash, buf[p] != 0x3F { p += 1 }
        guard p > authorityStart else { throw .invalidTarget }
        for i in authorityStart..<p where buf[i] == 0x40 { throw .invalidTarget }  // no userinfo
        do { try FieldSemantics.validateHost(buf, authorityStart, p) } catch { throw .invalidTarget }
        let authority = ByteRange(start: authorityStart, end: p)
        return pathAndQuery(buf, p, end, form: .absolute, authority: authority)
    }

    private static func pathAndQuery(
        _ buf: UnsafeRawBufferPointer, _ start: Int, _ end: Int,
        form: RequestTargetForm, authority: ByteRange?
    ) -> Parts {
        var q = start
        while q < end, buf[q] != 0x3F { q += 1 }
        let query = q < end ? ByteRange(start: q + 1, end: end) : nil
        return Parts(form: form, path: ByteRange(start: start, end: q), query: query, authority: authority)
    }
}
