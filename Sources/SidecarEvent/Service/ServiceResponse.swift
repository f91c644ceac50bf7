import SidecarHTTP

/// What a service handler answers: status, header fields and a complete body.
/// `Content-Length`, `Connection` and `Date`-free framing are added by the server.
public struct ServiceResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: Int, contentType: String, body: String, headers: [(name: String, value: String)] = []) {
        self.init(status: status, headers: [("Content-Type", contentType)] + headers, body: Array(body.utf8))
    }

    public static func text(_ status: Int, _ body: String) -> ServiceResponse {
        ServiceResponse(status: status, contentType: "text/plain; charset=utf-8", body: body)
    }

    public static func json(_ status: Int, _ body: String) -> ServiceResponse {
        ServiceResponse(status: status, contentType: "application/json;charset=UTF-8", body: body,
                        headers: [("Cache-Control", "no-store"), ("Pragma", "no-cache")])
    }

    public static func html(_ status: Int, _ body: String) -> ServiceResponse {
        ServiceResponse(status: status, contentType: "text/html; charset=utf-8", body: body,
                        headers: [("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")])
    }

    /// The head and body on the wire. Fields with unsafe names or values are refused as a
    /// whole (500) rather than written: no handler may inject CR/LF into a head.
    func serialized(keepAlive: Bool, omitBody: Bool) -> [UInt8] {
        var writer = HeadWriter(capacity: 256 + body.count)
        writer.appendStatusLine(status: status, reason: HTTPStatus.reasonPhrase(status))
        for (name, value) in headers {
            let lower = name.lowercased()
            if lower == "content-length" || lower == "connection" || lower == "transfer-encoding" { continue }
            do { try writer.appendField(name: name, value: value) } catch {
                return ServiceResponse.text(500, "invalid response header\n")
                    .serialized(keepAlive: false, omitBody: omitBody)
            }
        }
        writer.appendContentLength(UInt64(body.count))
        if !keepAlive { writer.appendField("Connection", "close") }
        writer.finish()
        var bytes = writer.bytes
        if !omitBody { bytes.append(contentsOf: body) }
        return bytes
    }
}
