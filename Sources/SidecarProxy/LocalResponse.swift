import SidecarHTTP

/// A response the sidecar produces itself (errors, the unauthenticated answer, its own
/// endpoints). Small by construction: written to the client in one piece.
struct LocalResponse {
    var status: Int
    var reason: StaticString
    var contentType: StaticString = "text/plain; charset=utf-8"
    var body: [UInt8]
    var extraFields: [(name: StaticString, value: [UInt8])] = []
    /// `/check`'s answer: the session whose identity fields (and signed assertion) it carries,
    /// written as they were rendered for forwarding when the session was opened.
    var identity: OpenedSession?
    /// `/check`'s answer: the deciding rule's `set_headers`, as a forwarded request gets them.
    var ruleHeaders: (table: RuleHeaders, group: RuleHeaders.Group)?
    /// `no-store` unless the answer is public by nature (`jwks.json`): everything else the
    /// sidecar answers may depend on the session.
    var cacheControl: StaticString = "no-store"
    /// Where a page shows the request id (`{{request_id}}`): offsets into `body`, spliced as
    /// the response is written. Request ids are `[A-Za-z0-9._-]` by construction (a client's
    /// is kept only when it matches), so they need no HTML escaping.
    var requestIdOffsets: [Int] = []
    /// The Apple user an endpoint acted for (signed in, refreshed, signed out, deleted), for
    /// the access line of a request that carried no session of its own.
    var userID: String?

    /// Status codes the proxy produces, with a one-line plain-text body.
    static func plain(_ status: Int) -> LocalResponse {
        let (reason, text) = describe(status)
        return LocalResponse(status: status, reason: reason, body: Array("\(text)\n".utf8))
    }

    static func describe(_ status: Int) -> (StaticString, String) {
        let text: String
        switch status {
        case 400: text = "bad request"
        case 401: text = "unauthorized"
        case 404: text = "not found"
        case 405: text = "method not allowed"
        case 408: text = "request timeout"
        case 413: text = "request body too large"
        case 421: text = "misdirected request: no site here answers this host"
        case 429: text = "too many requests"
        case 431: text = "request header fields too large"
        case 502: text = "bad gateway: the upstream failed"
        case 503: text = "service unavailable"
        case 504: text = "gateway timeout: the upstream did not answer in time"
        case 505: text = "http version not supported"
        default: text = "error"
        }
        return (HTTPStatus.reasonPhrase(status), text)
    }

    /// The answer's fields in order, as name and value: the one list both codecs write (the
    /// HTTP/1.1 head below, HTTP/2's field list in `HTTP2Connection`).
    func forEachField(requestId: [UInt8], _ emit: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Void) {
        emit(Self.bytes("Content-Type"), Self.bytes(contentType))
        withUnsafeTemporaryAllocation(byteCount: 20, alignment: 1) { digits in
            var n = UInt64(bodyCount(requestId: requestId))
            var at = 20
            repeat {
                at -= 1
                digits[at] = UInt8(48 + n % 10)
                n /= 10
            } while n > 0
            emit(Self.bytes("Content-Length"), UnsafeRawBufferPointer(rebasing: digits[at...]))
        }
        emit(Self.bytes("Cache-Control"), Self.bytes(cacheControl))
        emit(Self.bytes("X-Content-Type-Options"), Self.bytes("nosniff"))
        emit(Self.bytes("Referrer-Policy"), Self.bytes("no-referrer"))
        for field in extraFields {
            field.value.withUnsafeBytes { emit(Self.bytes(field.name), $0) }
        }
        if let identity {
            // Rendered once as `Name: value` CRLF lines, for forwarding (OpenedSession).
            identity.withIdentityFields { RenderedFields.forEach($0, emit) }
            identity.assertionField.withUnsafeBytes { RenderedFields.forEach($0, emit) }
        }
        if let ruleHeaders { RenderedFields.forEach(ruleHeaders.table.block(ruleHeaders.group), emit) }
        if !requestId.isEmpty { requestId.withUnsafeBytes { emit(Self.bytes("X-Request-Id"), $0) } }
    }

    func write(keepAlive: Bool, headOnly: Bool, requestId: [UInt8], into out: inout ByteBuilder) {
        out.append("HTTP/1.1 ")
        out.append(decimal: UInt64(status))
        out.append(" ")
        out.append(reason)
        out.append("\r\n")
        forEachField(requestId: requestId) { name, value in
            out.append(name)
            out.append(": ")
            out.append(value)
            out.append("\r\n")
        }
        out.append(keepAlive ? "\r\n" : "Connection: close\r\n\r\n")
        guard !headOnly else { return }
        writeBody(requestId: requestId) { out.append($0) }
    }

    /// The body, the request id spliced in where the page shows it.
    func writeBody(requestId: [UInt8], _ emit: (UnsafeRawBufferPointer) -> Void) {
        body.withUnsafeBytes { body in
            var from = 0
            for offset in requestIdOffsets {
                emit(UnsafeRawBufferPointer(rebasing: body[from..<offset]))
                requestId.withUnsafeBytes(emit)
                from = offset
            }
            emit(UnsafeRawBufferPointer(rebasing: body[from...]))
        }
    }

    private static func bytes(_ text: StaticString) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
    }

    /// The body's length on the wire, the request id spliced in.
    func bodyCount(requestId: [UInt8]) -> Int { body.count + requestIdOffsets.count * requestId.count }
}
