/// Collects, while fields are parsed, what decides framing and connection handling.
struct FieldSemantics {
    var contentLength: UInt64?
    var transferEncodingCount = 0
    var transferEncodingIsChunked = false
    var hostCount = 0
    var host: ByteRange?
    var connectionClose = false
    var connectionKeepAlive = false
    var connectionUpgrade = false
    /// Some `Connection` option is neither `keep-alive` nor `upgrade` (`close` included).
    var connectionListsOthers = false
    var hasUpgradeField = false
    var expectContinue = false

    mutating func observe(
        _ buf: UnsafeRawBufferPointer, nameStart: Int, nameEnd: Int, valueStart: Int, valueEnd: Int
    ) throws(HTTPHeadError) {
        // The first letter (case folded) rules out most names before any comparison.
        let first = buf[nameStart] | 0x20
        switch nameEnd - nameStart {
        case 4 where first == UInt8(ascii: "h") && ByteCompare.equalsLowercased(buf, nameStart, nameEnd, "host"):
            hostCount += 1
            host = ByteRange(start: valueStart, end: valueEnd)
            try Self.validateHost(buf, valueStart, valueEnd)
        case 6 where first == UInt8(ascii: "e") && ByteCompare.equalsLowercased(buf, nameStart, nameEnd, "expect"):
            if ByteCompare.equalsLowercased(buf, valueStart, valueEnd, "100-continue") {
                expectContinue = true
            }
        case 7 where first == UInt8(ascii: "u") && ByteCompare.equalsLowercased(buf, nameStart, nameEnd, "upgrade"):
            hasUpgradeField = true
        case 10 where first == UInt8(ascii: "c") && ByteCompare.equalsLowercased(buf, nameStart, nameEnd, "connection"):
            observeConnection(buf, valueStart, valueEnd)
        case 14 where first == UInt8(ascii: "c") && ByteCompare.equalsLowercased(buf, nameStart, nameEnd, "content-length"):
            try observeContentLength(buf, valueStart, valueEnd)
        case 17 where first == UInt8(ascii: "t") && ByteCompare.equalsLowercased(buf, nameStart, nameEnd, "transfer-encoding"):
            transferEncodingCount += 1
            transferEncodingIsChunked =
                ByteCompare.equalsLowercased(buf, valueStart, valueEnd, "chunked")
        default:
            break
        }
    }

    /// The framing both message kinds share: CL+TE, TE other than one `chunked`, TE in 1.0.
    func explicitFraming(version: HTTPVersion) throws(HTTPHeadError) -> BodyFraming? {
        if transferEncodingCount > 0 {
            if contentLength != nil { throw .contentLengthWithTransferEncoding }
            guard version == .http11, transferEncodingCount == 1, transferEncodingIsChunked else {
                throw .unsupportedTransferEncoding
            }
            return .chunked
        }
        if let n = contentLength { return n == 0 ? BodyFraming.none : .contentLength(n) }
        return nil
    }

    func keepAlive(version: HTTPVersion) -> Bool {
        if connectionClose { return false }
        return version == .http11 || connectionKeepAlive
    }

    /// Content-Length = 1*DIGIT; a comma list or repeated fields must all carry one value.
    private mutating func observeContentLength(
        _ buf: UnsafeRawBufferPointer, _ start: Int, _ end: Int
    ) throws(HTTPHeadError) {
        var p = start
        while true {
            while p < end, ASCII.isOWS(buf[p]) { p += 1 }
            var value: UInt64 = 0
            let digitsStart = p
            while p < end, ASCII.isDigit(buf[p]) {
                let (m, o1) = value.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.addingReportingOverflow(UInt64(buf[p] &- 0x30))
                if o1 || o2 { throw .invalidContentLength }
                value = s
                p += 1
            }
            guard p > digitsStart else { throw .invalidContentLength }
            while p < end, ASCII.isOWS(buf[p]) { p += 1 }
            if let seen = contentLength, seen != value { throw .conflictingContentLength }
            contentLength = value
            if p == end { return }
            guard buf[p] == ASCII.comma else { throw .invalidContentLength }
            p += 1
        }
    }

    private mutating func observeConnection(_ buf: UnsafeRawBufferPointer, _ start: Int, _ end: Int) {
        Tokens.forEach(in: buf, start, end) { s, e in
            if ByteCompare.equalsLowercased(buf, s, e, "keep-alive") {
                connectionKeepAlive = true
            } else if ByteCompare.equalsLowercased(buf, s, e, "upgrade") {
                connectionUpgrade = true
            } else {
                connectionListsOthers = true
                if ByteCompare.equalsLowercased(buf, s, e, "close") { connectionClose = true }
            }
        }
    }

    /// Host = uri-host [ ":" port ]: reg-name, IP literal or IPv4 characters only. Also the
    /// rule for the authority of an absolute-form target, which stands in for Host.
    static func validateHost(
        _ buf: UnsafeRawBufferPointer, _ start: Int, _ end: Int
    ) throws(HTTPHeadError) {
        var p = start
        while p < end {
            switch buf[p] {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A,  // DIGIT ALPHA
                0x2D, 0x2E, 0x5F, 0x7E,  // - . _ ~
                0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D,  // sub-delims
                0x3A, 0x5B, 0x5D, 0x25:  // : [ ] %
                p += 1
            default:
                throw .invalidHost
            }
        }
    }
}

/// Comma-separated list elements, trimmed of OWS, empty elements skipped (RFC 9110 §5.6.1).
enum Tokens {
    @inline(__always) static func forEach(
        in buf: UnsafeRawBufferPointer, _ start: Int, _ end: Int, _ body: (Int, Int) -> Void
    ) {
        var p = start
        while p < end {
            while p < end, ASCII.isOWS(buf[p]) || buf[p] == ASCII.comma { p += 1 }
            let s = p
            while p < end, buf[p] != ASCII.comma { p += 1 }
            var e = p
            while e > s, ASCII.isOWS(buf[e - 1]) { e -= 1 }
            if e > s { body(s, e) }
        }
    }
}
