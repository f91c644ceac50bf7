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

    func write(keepAlive: Bool, headOnly: Bool, requestId: [UInt8], into out: inout ByteBuilder) {
        out.append("HTTP/1.1 ")
        out.append(decimal: UInt64(status))
        out.append(" ")
        out.append(reason)
        out.append("\r\nContent-Type: ")
        out.append(contentType)
        out.append("\r\nContent-Length: ")
        out.append(decimal: UInt64(bodyCount(requestId: requestId)))
        out.append("\r\nCache-Control: ")
        out.append(cacheControl)
        out.append("\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n")
        for field in extraFields {
            out.append(field.name)
            out.append(": ")
            out.append(field.value)
            out.append("\r\n")
        }
        if let identity {
            identity.withIdentityFields { out.append($0) }
            out.append(identity.assertionField)  // the whole `X-Auth-Assertion: …` line, or empty
        }
        if !requestId.isEmpty {
            out.append("X-Request-Id: ")
            out.append(requestId)
            out.append("\r\n")
        }
        out.append(keepAlive ? "\r\n" : "Connection: close\r\n\r\n")
        guard !headOnly else { return }
        var from = 0
        for offset in requestIdOffsets {
            out.append(body[from..<offset])
            out.append(requestId)
            from = offset
        }
        out.append(body[from...])
    }

    /// The body's length on the wire, the request id spliced in.
    func bodyCount(requestId: [UInt8]) -> Int { body.count + requestIdOffsets.count * requestId.count }
}
