import SidecarConfig
import SidecarEvent
import SidecarHTTP

/// Everything the proxy engine needs: the loaded configuration, whose typed values the
/// runtime reads in place (`config.limits.maxStreams`: no key is copied into a field of its
/// own), and what the process adds to it at start (the TLS context, the pages, the sign-in
/// state, the version).
public struct ProxyOptions: Sendable {
    public var config: Config
    /// The sidecar's own pages: built-in or the operator's `pages.templates`.
    public var pages: PageRenderer = .builtIn
    /// Each site's own pages (`sites.<name>.pages`); nil when no site has any.
    public var sitePages: SitePages?
    /// Sign in with Apple and sessions; nil: no sessions (non-public paths are refused and
    /// the endpoints under `routes.prefix` answer 404).
    public var auth: AuthSettings?
    /// Scheme of the public listener: `https` when `tls` is set.
    public var scheme = "http"
    /// `tls.cert_file`/`tls.key_file`: serve HTTPS on the public listener. Read on each accept,
    /// so a reload's new certificate serves new connections while open ones keep theirs.
    public var tls: TLSServerContext?
    /// `tls.acme`: the managed certificate's readiness and metrics.
    public var certificateReport: CertificateReport?
    /// The build's version, for the start-up line and `sidecar_build_info`.
    public var version = SidecarVersion.version
    /// Idle keep-alive upstream connections kept per worker (per upstream server). As many as
    /// a burst used, so that the next one reuses them: at 128, fifty HTTP/2 clients of 100
    /// streams (1,600 upstream connections at once) closed and reopened most of them, 9.3
    /// system calls a request instead of 1.4 and twice the CPU (proxy-bench h2m100).
    /// Descriptors stay bounded by `max_connections` (the oldest idle one gives way to a new
    /// connection) and time by `upstream_idle_timeout`.
    public var upstreamPoolSize = 4096
    /// A request body's rate (`limits.min_body_rate`) is checked from this long after its first byte.
    public var minBodyGraceMs: Int64 = 10_000
    /// How long in-flight requests may finish after SIGTERM/SIGINT.
    public var shutdownGraceMs: Int64 = 10_000
    /// An upstream success this recent makes /readyz answer 200 without probing.
    public var readinessWindowMs: Int64 = 10_000

    public init(config: Config) {
        self.config = config
    }

    /// Identity header names (`headers.*`) plus `headers.strip`: removed from every request.
    var strippedHeaders: [String] { config.headers.strippedIdentityHeaders + config.headers.strip }

    /// The name of upstream `index` as logs, metrics and `/readyz` give it.
    public func upstreamName(_ index: Int) -> String {
        index == 0 ? Config.defaultUpstreamName : config.upstreams[index - 1].name
    }

    /// Every upstream, the top-level one first.
    var allUpstreams: [UpstreamPlan] {
        [UpstreamPlan(
            servers: config.upstreamServers.isEmpty ? [Config.UpstreamServer(target: config.upstream)] : config.upstreamServers,
            timeoutMs: config.upstreamTimeout.milliseconds, connectTimeoutMs: config.upstreamConnectTimeout.milliseconds,
            maxConnections: config.upstreamMaxConnections, tls: config.upstreamTLS, balancing: config.upstreamBalancing,
            healthCheck: config.upstreamHealthCheck)]
            + config.upstreams.map {
                UpstreamPlan(
                    servers: $0.servers.isEmpty ? [Config.UpstreamServer(target: $0.target)] : $0.servers,
                    timeoutMs: $0.timeout.milliseconds, connectTimeoutMs: $0.connectTimeout.milliseconds,
                    maxConnections: $0.maxConnections, tls: $0.tls, balancing: $0.balancing, healthCheck: $0.healthCheck)
            }
    }

    /// Each upstream's TLS (nil: plain), as `allUpstreams` orders them; made by the proxy at
    /// start and on each reload (`UpstreamTLSContext.load`), which reads the files again.
    var upstreamTLS: [UpstreamTLSContext?] = []
}

/// The names the request path reads (`context.settings.options.idleTimeoutMs`): each reads the typed
/// value in `config` where it lies, a load like any stored property's, no lookup.
extension ProxyOptions {
    var http2: Bool { config.topLevel.http2 }
    var proxyProtocol: Bool { config.topLevel.proxyProtocol }
    var encodedSlashes: EncodedSeparators { config.paths.encodedSlashes }
    var maxHeaderBytes: Int { config.limits.maxHeaderBytes }
    /// 0 = unlimited.
    var maxUploadBytes: UInt64 { UInt64(max(0, config.limits.maxUploadBytes)) }
    var headerTimeoutMs: Int64 { config.limits.headerTimeout.milliseconds }
    var idleTimeoutMs: Int64 { config.limits.idleTimeout.milliseconds }
    var upstreamTimeoutMs: Int64 { config.topLevel.upstreamTimeout.milliseconds }
    var upstreamConnectTimeoutMs: Int64 { config.topLevel.upstreamConnectTimeout.milliseconds }
    /// Beyond this much data held for a slower side (response bytes for the client, body
    /// bytes for the upstream) the faster side is paused.
    var responseBufferBytes: Int { config.limits.responseBuffer }
    /// Bytes per second (0: off), checked from `minBodyGraceMs` after a request body's first byte.
    var minBodyRate: Int { config.limits.minBodyRate }
    var maxStreams: Int { config.limits.maxStreams }
    var upstreamConnectionsPerClient: Int { config.limits.upstreamConnectionsPerClient }
}

/// One upstream as the proxy runs it: its servers (one at least) and how to treat them.
struct UpstreamPlan: Sendable {
    var servers: [Config.UpstreamServer]
    var timeoutMs: Int64
    var connectTimeoutMs: Int64
    /// Per server, all workers together; 0: none.
    var maxConnections: Int
    var tls: Config.UpstreamTLS
    var balancing: Config.Balancing
    var healthCheck: Config.HealthCheck

    /// The first server's URL: what the forwarded `Host` and the base path come from.
    var upstream: Upstream { servers[0].target }
}
