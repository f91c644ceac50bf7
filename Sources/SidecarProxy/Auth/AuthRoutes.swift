import Logging
import SidecarHTTP

/// The sidecar's own endpoints under `routes.prefix`.
enum AuthEndpoint {
    case login, callback, logout, me, check
    /// The public keys of the signed assertion.
    case jwks
    /// Native apps: sign-in with an identity token, its nonces, bearer refresh.
    case native, nativeNonce, nativeRefresh
    /// Android's web flow hands its result back to the app.
    case androidCallback
    /// Apple's server-to-server events.
    case appleNotifications
    /// Account deletion: Apple's tokens and every session of the user revoked.
    case revoke

    /// The endpoint for a path below the prefix (`/login`, …), or the refusal to send.
    static func route(_ subpath: ArraySlice<UInt8>, method: HTTPMethod) -> Result<AuthEndpoint, RouteRefusal> {
        let endpoint: AuthEndpoint
        switch String(decoding: subpath, as: UTF8.self) {
        case "/login": endpoint = .login
        case "/callback": endpoint = .callback
        case "/logout": endpoint = .logout
        case "/me": endpoint = .me
        case "/check": endpoint = .check
        case "/jwks.json": endpoint = .jwks
        case "/native": endpoint = .native
        case "/native/nonce": endpoint = .nativeNonce
        case "/native/refresh": endpoint = .nativeRefresh
        case "/android/callback": endpoint = .androidCallback
        case "/apple/notifications": endpoint = .appleNotifications
        case "/revoke": endpoint = .revoke
        default: return .failure(.notFound)
        }
        guard endpoint.allows(method) else { return .failure(.methodNotAllowed(endpoint.allowHeader)) }
        return .success(endpoint)
    }

    private func allows(_ method: HTTPMethod) -> Bool {
        switch self {
        case .login, .me, .check, .jwks, .nativeNonce: method == .get || method == .head
        case .callback, .native, .nativeRefresh, .androidCallback, .appleNotifications, .revoke: method == .post
        case .logout: method == .get || method == .post
        }
    }

    private var allowHeader: [UInt8] {
        switch self {
        case .login, .me, .check, .jwks, .nativeNonce: Array("GET, HEAD".utf8)
        case .callback, .native, .nativeRefresh, .androidCallback, .appleNotifications, .revoke: Array("POST".utf8)
        case .logout: Array("GET, POST".utf8)
        }
    }

    /// The most of a request body read before handling, below `limits.max_body_bytes`; 0:
    /// the endpoint takes no body and reads none (`/revoke` and `/native/refresh` need only the
    /// session and the query). What each takes is a few KiB: Apple's form_post (an id_token of
    /// about 1 KiB, the code, the state, the first-time `user`), a native sign-in's JSON, a
    /// notification's signed payload. Each byte held for a client that stalls is memory an
    /// unauthenticated peer chooses, so the caps stay near what the endpoint needs.
    var bodyLimit: Int {
        switch self {
        case .callback, .androidCallback, .native, .appleNotifications: 16 * 1024
        case .login, .logout, .me, .check, .jwks, .nativeNonce, .nativeRefresh, .revoke: 0
        }
    }
}

enum RouteRefusal: Error {
    case notFound
    case methodNotAllowed([UInt8])
}

/// A complete request to one of the endpoints.
struct EndpointRequest {
    let head: HTTPRequestHead
    let body: [UInt8]
    /// The API-client test (JSON `Accept`, `Authorization`, `X-Requested-With`,
    /// `access.api_paths`): answer JSON instead of pages and redirects.
    let isAPIClient: Bool
    /// The exchange's request id (the client's valid `X-Request-Id` or a generated one), so
    /// an endpoint's log lines can be matched with the access line and the user's report.
    var requestId: String = ""
    /// The exchange's trace id (32 hex digits), on the same lines as the request id.
    var traceId: String = ""
    /// The exchange's trace, whose sidecar span the endpoint's calls (Apple's) are children of.
    var trace = TraceContext()
    /// For `check`: what the rules say about the request asked about.
    var forwardAuth = ForwardAuthRoute.noRules

    /// The sign-in logger with this request's id on every line, so each line an endpoint
    /// writes joins its access line.
    var logger: Logger {
        var logger = Authenticator.endpointLogger
        logger[metadataKey: "request_id"] = .string(requestId)
        logger[metadataKey: "trace_id"] = .string(traceId)
        return logger
    }
}
