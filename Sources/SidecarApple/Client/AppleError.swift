/// The OAuth error code in Apple's 4xx JSON (`{"error": "invalid_grant", ...}`).
public enum AppleErrorCode: Equatable, Sendable {
    case invalidGrant
    case invalidClient
    case invalidRequest
    case unauthorizedClient
    case unsupportedGrantType
    case invalidScope
    case other(String)

    public init(_ code: String) {
        switch code {
        case "invalid_grant": self = .invalidGrant
        case "invalid_client": self = .invalidClient
        case "invalid_request": self = .invalidRequest
        case "unauthorized_client": self = .unauthorizedClient
        case "unsupported_grant_type": self = .unsupportedGrantType
        case "invalid_scope": self = .invalidScope
        default: self = .other(code)
        }
    }

    public var code: String {
        switch self {
        case .invalidGrant: "invalid_grant"
        case .invalidClient: "invalid_client"
        case .invalidRequest: "invalid_request"
        case .unauthorizedClient: "unauthorized_client"
        case .unsupportedGrantType: "unsupported_grant_type"
        case .invalidScope: "invalid_scope"
        case .other(let code): code
        }
    }
}

/// Why a call to Apple's token, revoke or keys endpoint did not succeed.
public enum AppleError: Error, Equatable, Sendable {
    /// Apple answered 4xx with its error JSON: a definite refusal.
    case rejected(AppleErrorCode, description: String?, status: Int)
    /// 5xx, or a non-2xx answer without parseable error JSON.
    case appleServerError(status: Int)
    /// 2xx whose body is not the expected JSON (e.g. a token response that is not an object).
    case invalidResponse(status: Int)
    /// Apple could not be reached or did not answer in time.
    case transport(AppleHTTPFailure)

    /// Stable reason for logs: `apple_invalid_grant`, `apple_server_error_503`, `timeout`, …
    public var reason: String {
        switch self {
        case .rejected(let code, _, _): "apple_\(code.code.filter { $0.isLetter || $0.isNumber || $0 == "_" })"
        case .appleServerError(let status): "apple_server_error_\(status)"
        case .invalidResponse(let status): "apple_invalid_response_\(status)"
        case .transport(let failure): failure.reason
        }
    }

    /// True when the failure was a timeout (a 504 for the client rather than a 502).
    public var isTimeout: Bool { self == .transport(.timeout) }
}
