/// A complete response from Apple: status, header fields in arrival order, decoded body.
public struct AppleHTTPResponse: Sendable, Equatable {
    public let status: Int
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of a header field, by case-insensitive name.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body
            && lhs.headers.elementsEqual(rhs.headers) { $0.name == $1.name && $0.value == $1.value }
    }
}

/// Why a request to Apple produced no response. `reason` is stable, for logs and metrics.
public enum AppleHTTPFailure: Error, Equatable, Sendable {
    /// The host name could not be resolved.
    case dnsFailure
    /// The TCP connection could not be established (refused, unreachable).
    case connectFailed
    /// TLS failed; `verifyResult` is OpenSSL's X509 verify result (0 when the certificate was
    /// not the problem, e.g. no common protocol version; 62 host mismatch; 18/19/20/21 untrusted).
    case tlsHandshakeFailed(verifyResult: Int)
    /// The deadline passed (DNS, connect, handshake, request and response together).
    case timeout
    /// The peer closed or reset the connection before a complete response.
    case connectionClosed
    /// The response could not be parsed as HTTP/1.1.
    case malformedResponse
    /// The response body (or head) exceeded the configured limit.
    case bodyTooLarge

    public var reason: String {
        switch self {
        case .dnsFailure: "dnsFailure"
        case .connectFailed: "connectFailed"
        case .tlsHandshakeFailed(let result): "tlsHandshakeFailed(verifyResult: \(result))"
        case .timeout: "timeout"
        case .connectionClosed: "connectionClosed"
        case .malformedResponse: "malformedResponse"
        case .bodyTooLarge: "bodyTooLarge"
        }
    }
}

/// The single completion of one request.
public enum AppleHTTPResult: Sendable, Equatable {
    case response(AppleHTTPResponse)
    case failure(AppleHTTPFailure)
}

/// One request to Apple. The client adds Host, User-Agent, Accept, Content-Length and
/// Connection; `contentType` is sent only with a body.
public struct AppleHTTPRequest: Sendable {
    public enum Method: String, Sendable { case GET, POST }

    public let method: Method
    /// Path below the endpoint's base path, starting with `/` (e.g. `/auth/token`).
    public let path: String
    public let contentType: String?
    public let body: [UInt8]
    /// A bearer token sent as `Authorization: Bearer …` (Apple's user-migration endpoint).
    public var bearerToken: String?

    public init(method: Method, path: String, contentType: String? = nil, body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.contentType = contentType
        self.body = body
    }

    /// A POST with an `application/x-www-form-urlencoded` body.
    public static func form(path: String, fields: [(String, String)]) -> AppleHTTPRequest {
        AppleHTTPRequest(
            method: .POST, path: path, contentType: "application/x-www-form-urlencoded",
            body: FormEncoding.encode(fields))
    }
}
