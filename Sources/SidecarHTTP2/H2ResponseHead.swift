import Glibc

/// Turns the HTTP/1.1 response head that a stream's exchange wrote into the stream's HTTP/2
/// field list: `:status` first, names lowercased, the connection-specific fields of RFC 9113
/// §8.2.2 left out, and the body's framing read from the fields that set it.
///
/// The head is the sidecar's own writing (a relayed upstream head that the strict parser
/// took, or a local answer), so this is a scan of lines it knows the shape of, not a second
/// parse: anything outside that shape is refused (the stream is then reset) rather than
/// guessed at.
public enum H2ResponseHead {
    public struct Malformed: Error, Equatable {}

    public enum Framing: Equatable {
        /// A 1xx head: not sent (HTTP/2 has no use for it here); the final head follows.
        case interim
        case none
        case contentLength(UInt64)
        case chunked
        case untilClose
    }

    /// Heads larger than this are refused (the writer never produces one).
    public static let maxBytes = 64 * 1024

    /// Translates the head at the start of `bytes` into `fields` (emptied first). Returns nil
    /// while the head is incomplete, else its length and the body's framing.
    public static func translate(
        _ bytes: UnsafeRawBufferPointer, requestIsHead: Bool, into fields: H2FieldList
    ) throws(Malformed) -> (length: Int, framing: Framing)? {
        guard let base = bytes.baseAddress else { return nil }
        let window = min(bytes.count, maxBytes)
        guard let headEnd = endOfHead(UnsafeRawBufferPointer(start: base, count: window)) else {
            if bytes.count >= maxBytes { throw Malformed() }
            return nil
        }
        let head = UnsafeRawBufferPointer(start: base, count: headEnd)
        // "HTTP/1.x DDD" then a space or the line's end.
        guard headEnd >= 16, head[0] == UInt8(ascii: "H"), head[1] == UInt8(ascii: "T"), head[2] == UInt8(ascii: "T"),
              head[3] == UInt8(ascii: "P"), head[4] == UInt8(ascii: "/"), head[8] == UInt8(ascii: " "),
              head[12] == UInt8(ascii: " ") || head[12] == UInt8(ascii: "\r")
        else { throw Malformed() }
        var status = 0
        for i in 9..<12 {
            let digit = head[i] &- 48
            guard digit < 10 else { throw Malformed() }
            status = status * 10 + Int(digit)
        }
        guard status >= 100 else { throw Malformed() }
        if status < 200 { return (headEnd, .interim) }

        fields.removeAll()
        fields.appendStatus(status)
        var contentLength: UInt64?
        var chunked = false
        var lineStart = lineEnd(head, from: 12) + 2
        while lineStart < headEnd - 2 {
            let end = lineEnd(head, from: lineStart)
            guard let colon = index(of: UInt8(ascii: ":"), in: head, from: lineStart, to: end), colon > lineStart
            else { throw Malformed() }
            var valueStart = colon + 1
            var valueEnd = end
            while valueStart < valueEnd, head[valueStart] == 0x20 || head[valueStart] == 0x09 { valueStart += 1 }
            while valueEnd > valueStart, head[valueEnd - 1] == 0x20 || head[valueEnd - 1] == 0x09 { valueEnd -= 1 }
            let name = UnsafeRawBufferPointer(rebasing: head[lineStart..<colon])
            let value = UnsafeRawBufferPointer(rebasing: head[valueStart..<valueEnd])
            switch name.count {
            case 7 where equalsLowercased(name, "upgrade"):
                break
            case 10 where equalsLowercased(name, "connection") || equalsLowercased(name, "keep-alive"):
                break
            case 16 where equalsLowercased(name, "proxy-connection"):
                break
            case 17 where equalsLowercased(name, "transfer-encoding"):
                // The writer frames a body it re-chunks as exactly `chunked`.
                guard equalsLowercased(value, "chunked") else { throw Malformed() }
                chunked = true
            case 14 where equalsLowercased(name, "content-length"):
                contentLength = try decimal(value)
                fields.append(lowercasing: name, value: value)
            default:
                fields.append(lowercasing: name, value: value)
            }
            lineStart = end + 2
        }
        if requestIsHead || status == 204 || status == 304 { return (headEnd, .none) }
        if chunked { return (headEnd, .chunked) }
        if let contentLength { return (headEnd, contentLength == 0 ? .none : .contentLength(contentLength)) }
        return (headEnd, .untilClose)
    }

    /// The length of the head up to and with its empty line (CRLF CRLF), nil if not all there.
    private static func endOfHead(_ bytes: UnsafeRawBufferPointer) -> Int? {
        var from = 0
        while from < bytes.count, let found = memchr(bytes.baseAddress! + from, 0x0A, bytes.count - from) {
            let at = bytes.baseAddress!.distance(to: UnsafeRawPointer(found))
            if at >= 3, bytes[at - 1] == 0x0D, bytes[at - 2] == 0x0A, bytes[at - 3] == 0x0D { return at + 1 }
            from = at + 1
        }
        return nil
    }

    /// The index of the CR that ends the line starting at or before `from` (the head ends
    /// with CRLF CRLF, so there is one).
    private static func lineEnd(_ head: UnsafeRawBufferPointer, from: Int) -> Int {
        let rest = head.count - from
        let found = memchr(head.baseAddress! + from, 0x0D, rest)!
        return head.baseAddress!.distance(to: UnsafeRawPointer(found))
    }

    private static func index(of byte: UInt8, in head: UnsafeRawBufferPointer, from: Int, to end: Int) -> Int? {
        guard let found = memchr(head.baseAddress! + from, Int32(byte), end - from) else { return nil }
        return head.baseAddress!.distance(to: UnsafeRawPointer(found))
    }

    private static func equalsLowercased(_ bytes: UnsafeRawBufferPointer, _ lower: StaticString) -> Bool {
        guard bytes.count == lower.utf8CodeUnitCount else { return false }
        let expected = lower.utf8Start
        for i in 0..<bytes.count {
            let c = bytes[i]
            if (c &- 0x41 < 26 ? c | 0x20 : c) != expected[i] { return false }
        }
        return true
    }

    private static func decimal(_ value: UnsafeRawBufferPointer) throws(Malformed) -> UInt64 {
        guard !value.isEmpty, value.count <= 19 else { throw Malformed() }
        var n: UInt64 = 0
        for c in value {
            let digit = c &- 48
            guard digit < 10 else { throw Malformed() }
            n = n * 10 + UInt64(digit)
        }
        return n
    }
}
