import SidecarEvent

/// Everything the proxy engine needs, independent of how it was configured (RunCommand maps
/// the YAML `Config` into this; tests build it directly).
public struct ProxyOptions: Sendable {
    public enum Upstream: Sendable, Equatable {
        /// `http://host:port[/base]`
        case tcp(host: String, port: UInt16, basePath: String)
        /// `unix:/path`
        case unix(path: String)
    }

    public var listen = "127.0.0.1:8080"
    public var workers = 1
    public var upstream: Upstream = .tcp(host: "127.0.0.1", port: 3000, basePath: "")
    public var upstreamTimeoutMs: Int64 = 60_000
    public var upstreamConnectTimeoutMs: Int64 = 5_000
    public var preserveHost = false
    /// Idle keep-alive upstream connections kept per worker.
    public var upstreamPoolSize = 128
    /// Where the sidecar's own endpoints live (`routes.prefix`).
    public var routePrefix = "/.auth"
    /// Globs on the normalized path served without a session.
    public var publicPaths: [String] = []
    /// Globs on the normalized path whose unauthenticated answer is 401 JSON.
    public var apiPaths: [String] = []
    /// Identity header names (headers.*) plus headers.strip: removed from every request.
    public var strippedHeaders: [String] = [
        "X-Auth-User-Id", "X-Auth-Email", "X-Auth-Email-Verified", "X-Auth-Private-Email",
        "X-Auth-Name", "X-Auth-Assertion",
    ]
    /// The sidecar's own pages: built-in or the operator's `pages.templates`.
    public var pages: PageRenderer = .builtIn
    /// `pages.sign_in`: browser navigations without a session get the sign-in page (401)
    /// instead of the redirect to the login.
    public var signInPage = false
    /// Sign in with Apple and sessions; nil: no sessions (non-public paths are refused and
    /// the endpoints under `routePrefix` answer 404).
    public var auth: AuthSettings?
    /// CIDRs whose X-Forwarded-* headers are honoured.
    public var trustedProxies: [String] = []
    /// Scheme of the public listener: `https` when `tls` is set.
    public var scheme = "http"
    /// `tls.cert_file`/`tls.key_file`: serve HTTPS on the public listener. Read on each accept,
    /// so a reload's new certificate serves new connections while open ones keep theirs.
    public var tls: TLSServerContext?
    public var adminListen: String? = "127.0.0.1:9090"
    /// The build's version, for the start-up line and `sidecar_build_info`.
    public var version = "dev"
    public var accessLog = true
    /// `log.format: text`: access lines in the application log's text layout.
    public var textLogs = false
    public var maxHeaderBytes = 16 * 1024
    /// 0 = unlimited.
    public var maxUploadBytes: UInt64 = 0
    public var headerTimeoutMs: Int64 = 10_000
    public var idleTimeoutMs: Int64 = 60_000
    public var maxConnections = 10_000
    /// Not set by the operator: lowered to what the descriptor limit allows, without a warning.
    public var maxConnectionsIsDefault = false
    /// `limits.response_buffer`: beyond this much data held for a slower side (response bytes
    /// for the client, body bytes for the upstream) the faster side is paused.
    public var responseBufferBytes = 64 * 1024
    /// `limits.min_body_rate` in bytes per second (0: off), checked from `minBodyGraceMs`
    /// after a request body's first byte.
    public var minBodyRate = 256
    public var minBodyGraceMs: Int64 = 10_000
    /// How long in-flight requests may finish after SIGTERM/SIGINT.
    public var shutdownGraceMs: Int64 = 10_000
    /// An upstream success this recent makes /readyz answer 200 without probing.
    public var readinessWindowMs: Int64 = 10_000

    public init() {}
}
