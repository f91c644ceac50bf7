import SidecarConfig
import SidecarEvent
import SidecarHTTP

/// Everything the proxy engine needs, independent of how it was configured (`init(config:)`
/// maps the YAML `Config` into this; tests build it directly). What a config file may leave
/// out starts from `ConfigDefaults`.
public struct ProxyOptions: Sendable {
    public enum Upstream: Sendable, Equatable {
        /// `http://host:port[/base]`
        case tcp(host: String, port: UInt16, basePath: String)
        /// `unix:/path`
        case unix(path: String)
    }

    public var listen = ConfigDefaults.listen.description
    public var workers = 1
    public var upstream: Upstream = .tcp(host: "127.0.0.1", port: 3000, basePath: "")
    public var upstreamTimeoutMs = ConfigDefaults.upstreamTimeout.milliseconds
    public var upstreamConnectTimeoutMs = ConfigDefaults.upstreamConnectTimeout.milliseconds
    public var preserveHost = false
    /// `upstreams`: more upstreams, which rules route to.
    public var namedUpstreams: [NamedUpstream] = []
    /// `rules`: per-path policy and routing, first match wins.
    public var rules: [Rule] = []
    /// Idle keep-alive upstream connections kept per worker (per upstream).
    public var upstreamPoolSize = 128
    /// `upstream_max_connections`: open connections to the top-level upstream, all workers
    /// together; 0 = no cap of its own (the worker's descriptor budget still bounds it).
    public var upstreamMaxConnections = ConfigDefaults.upstreamMaxConnections
    /// `limits.upstream_connections_per_client`: what one client connection (an HTTP/2 one's
    /// streams together) may hold of upstream connections at once; its other streams queue.
    public var upstreamConnectionsPerClient = ConfigDefaults.upstreamConnectionsPerClient
    /// Where the sidecar's own endpoints live (`routes.prefix`).
    public var routePrefix = ConfigDefaults.routePrefix
    /// Globs on the normalized path served without a session.
    public var publicPaths: [String] = []
    /// Globs on the normalized path whose unauthenticated answer is 401 JSON.
    public var apiPaths: [String] = []
    /// What `%2F`, `%5C` and a raw `\` in a request path mean (`paths.encoded_slashes`).
    public var encodedSlashes = EncodedSeparators.reject
    /// Identity header names (headers.*) plus headers.strip: removed from every request.
    public var strippedHeaders = ConfigDefaults.identityHeaders.map(\.name)
    /// The sidecar's own pages: built-in or the operator's `pages.templates`.
    public var pages: PageRenderer = .builtIn
    /// `pages.sign_in`: browser navigations without a session get the sign-in page (401)
    /// instead of the redirect to the login.
    public var signInPage = false
    /// `tracing.trust_incoming`: continue any client's `traceparent`; false: only a trusted
    /// proxy's (others start a trace).
    public var traceTrustIncoming = ConfigDefaults.traceTrustIncoming
    /// `tracing.otlp_endpoint`: where spans are posted; nil: none are recorded.
    public var traceEndpoint: HTTPURL?
    /// `tracing.otlp_ca_file`: extra trust anchors for an `https` collector.
    public var traceCAFile: String?
    /// `tracing.sample_ratio`: the share of new traces sampled.
    public var traceSampleRatio = ConfigDefaults.traceSampleRatio
    /// `tracing.max_incoming_sampled_per_second`: continued sampled traces honoured per second.
    public var traceMaxIncomingSampledPerSecond = ConfigDefaults.traceMaxIncomingSampledPerSecond
    /// Sign in with Apple and sessions; nil: no sessions (non-public paths are refused and
    /// the endpoints under `routePrefix` answer 404).
    public var auth: AuthSettings?
    /// CIDRs whose X-Forwarded-* headers are honoured.
    public var trustedProxies: [String] = []
    /// Each connection on the public listener begins with a PROXY protocol header from one of
    /// `trustedProxies`; its source address is then the client's.
    public var proxyProtocol = false
    /// HTTP/2 beside HTTP/1.1 (`http2`), and its concurrent streams per connection.
    public var http2 = ConfigDefaults.http2
    public var maxStreams = ConfigDefaults.maxStreams
    /// Scheme of the public listener: `https` when `tls` is set.
    public var scheme = "http"
    /// `tls.cert_file`/`tls.key_file`: serve HTTPS on the public listener. Read on each accept,
    /// so a reload's new certificate serves new connections while open ones keep theirs.
    public var tls: TLSServerContext?
    /// `tls.acme`: the managed certificate's readiness and metrics.
    public var certificateReport: CertificateReport?
    public var adminListen: String? = ConfigDefaults.adminListen.description
    /// The build's version, for the start-up line and `sidecar_build_info`.
    public var version = "dev"
    public var accessLog = ConfigDefaults.accessLog
    /// `log.format: text`: access lines in the application log's text layout.
    public var textLogs = false
    /// `log.redact_query`: query parameters masked in access lines beside the built-in ones.
    public var logRedactQuery: [String] = []
    public var maxHeaderBytes = ConfigDefaults.maxHeaderBytes
    /// 0 = unlimited.
    public var maxUploadBytes = UInt64(ConfigDefaults.maxUploadBytes)
    public var headerTimeoutMs = ConfigDefaults.headerTimeout.milliseconds
    public var idleTimeoutMs = ConfigDefaults.idleTimeout.milliseconds
    public var maxConnections = ConfigDefaults.maxConnections
    /// Not set by the operator: lowered to what the descriptor limit allows, without a warning.
    public var maxConnectionsIsDefault = false
    /// `limits.response_buffer`: beyond this much data held for a slower side (response bytes
    /// for the client, body bytes for the upstream) the faster side is paused.
    public var responseBufferBytes = ConfigDefaults.responseBuffer
    /// `limits.min_body_rate` in bytes per second (0: off), checked from `minBodyGraceMs`
    /// after a request body's first byte.
    public var minBodyRate = ConfigDefaults.minBodyRate
    public var minBodyGraceMs: Int64 = 10_000
    /// How long in-flight requests may finish after SIGTERM/SIGINT.
    public var shutdownGraceMs: Int64 = 10_000
    /// An upstream success this recent makes /readyz answer 200 without probing.
    public var readinessWindowMs: Int64 = 10_000

    public init() {}
}

extension ProxyOptions {
    /// Maps the typed configuration onto the engine's options.
    public init(config: Config) {
        self.init()
        listen = config.listen.description
        workers = max(1, config.workers)
        upstream = Upstream(config.upstream)
        applyRules(config)
        upstreamTimeoutMs = config.upstreamTimeout.milliseconds
        upstreamConnectTimeoutMs = config.upstreamConnectTimeout.milliseconds
        upstreamMaxConnections = config.upstreamMaxConnections
        upstreamConnectionsPerClient = config.limits.upstreamConnectionsPerClient
        preserveHost = config.preserveHost
        routePrefix = config.routes.prefix
        publicPaths = config.access.publicPaths
        apiPaths = config.access.apiPaths
        encodedSlashes = config.encodedSlashes
        strippedHeaders = config.headers.identityHeaders + config.headers.strip
        trustedProxies = config.trustedProxies.map(\.description)
        proxyProtocol = config.proxyProtocol
        http2 = config.http2
        maxStreams = config.limits.maxStreams
        adminListen = config.admin.listen.description
        accessLog = config.log.access
        textLogs = config.log.format == .text
        logRedactQuery = config.log.redactQuery
        version = SidecarVersion.version
        maxHeaderBytes = config.limits.maxHeaderBytes
        maxUploadBytes = UInt64(max(0, config.limits.maxUploadBytes))
        headerTimeoutMs = config.limits.headerTimeout.milliseconds
        idleTimeoutMs = config.limits.idleTimeout.milliseconds
        maxConnections = config.limits.maxConnections
        maxConnectionsIsDefault = config.limits.maxConnectionsIsDefault
        responseBufferBytes = config.limits.responseBuffer
        minBodyRate = config.limits.minBodyRate
        signInPage = config.pages.signIn
        traceTrustIncoming = config.tracing.trustIncoming
        traceEndpoint = config.tracing.otlpEndpoint
        traceCAFile = config.tracing.otlpCAFile
        traceSampleRatio = config.tracing.sampleRatio
        traceMaxIncomingSampledPerSecond = config.tracing.maxIncomingSampledPerSecond
    }
}
