import SidecarHTTP
/// The sidecar's configuration, read from `sidecar.yaml`.
///
/// Build one with `Config.load(file:)` (or `Config.parse(yaml:…)` in tests). Every key of
/// `sidecar.yaml` is here, typed, with its documented default already applied; secrets
/// (`env:`/`file:` references) are resolved and key files read at load time. The top-level
/// keys with a default are read through `topLevel` as if they were fields of their own
/// (`config.listen`).
@dynamicMemberLookup
public struct Config: Sendable {
    /// The file this configuration came from (used in messages).
    public var file: String

    public var topLevel = TopLevel()
    /// Serve HTTPS directly when set.
    public var tls: TLS?
    /// `tls.acme`: the certificate obtained and renewed from an ACME CA instead (then `tls` is nil).
    public var acme: ACME?
    public var publicURL: HTTPURL
    public var upstream: Upstream
    /// Every server of the top-level upstream, `upstream` (the first) included.
    public var upstreamServers: [UpstreamServer] = []
    /// `upstream_tls`: how an `https://` upstream is verified and whom the sidecar says it is.
    public var upstreamTLS = UpstreamTLS()
    /// `upstream_health_check`: the top-level upstream's active check.
    public var upstreamHealthCheck = HealthCheck()

    public var routes = Routes()
    public var paths = Paths()
    public var apple: Apple
    public var appleTransfer = AppleTransfer()
    public var session: Session
    public var access = Access()
    public var headers = Headers()
    public var assertion = Assertion()
    public var notifications = Notifications()
    public var revocations = Revocations()
    public var admin = Admin()
    public var users = Users()
    public var log = Log()
    public var limits = Limits()
    public var pages = Pages()
    public var tracing = Tracing()
    /// More upstreams, by name (`upstreams`), for rules to route to.
    public var upstreams: [NamedUpstream] = []
    /// Per-path policy and routing, first match wins (`rules`).
    public var rules: [Rule] = []
    /// Public hosts and their upstreams (each also in `upstreams`, by the site's name); empty:
    /// one site, every host.
    public var sites: [Site] = []
    /// The site of a host no site names; nil: such a request gets 421.
    public var defaultSite: String? = nil

    /// Things that load but look wrong (e.g. a public_url Apple would never accept).
    public var warnings: [ConfigWarning]

    /// The keys `SIDECAR_*` variables set (over the file's), by key path.
    public var environment: [EnvironmentSetting] = []

    public subscript<Value>(dynamicMember field: WritableKeyPath<TopLevel, Value>) -> Value {
        get { topLevel[keyPath: field] }
        set { topLevel[keyPath: field] = newValue }
    }

    /// `public_url` + `routes.prefix` + `/callback`: the redirect_uri registered with Apple.
    public var redirectURI: String { publicURL.origin + routes.prefix + "/callback" }

    /// The top-level keys that have a default: where the sidecar listens, whom it trusts,
    /// and how it treats the upstream.
    public struct TopLevel: Sendable, Equatable, ConfigSection {
        public var listen = ListenAddress.tcp(host: "127.0.0.1", port: 8080)
        /// CIDRs of proxies in front of the sidecar whose `X-Forwarded-*` headers are honoured.
        public var trustedProxies: [CIDR] = []
        /// Every connection on `listen` begins with a PROXY protocol header (v1 or v2) from one
        /// of `trustedProxies`, whose source address is then the client's.
        public var proxyProtocol = false
        /// HTTP/2 beside HTTP/1.1: `h2` by ALPN over TLS, the prior-knowledge preface in the clear.
        public var http2 = true
        /// Event loops, one per thread, sharing the port.
        public var workers = Parse.defaultWorkers
        public var upstreamTimeout = TimeSpan.seconds(60)
        public var upstreamConnectTimeout = TimeSpan.seconds(5)
        /// An idle keep-alive connection to an upstream unused this long is closed.
        public var upstreamIdleTimeout = TimeSpan.seconds(60)
        /// The top-level upstream's cap, and the default of `upstreams`'; 0 = none.
        public var upstreamMaxConnections = 0
        public var preserveHost = false
        /// The top-level upstream's, and the default of `upstreams`'.
        public var upstreamBalancing = Balancing()
        public var resolver: ResolverAddress?

        public init() {}

        static let path = ""
        static let keys: [ConfigKey<Self>] = [
            .value(\.listen, "listen", "host:port, [::1]:port or unix:/path") { text, context in
                ListenAddress.parse(text, baseDirectory: context.baseDirectory)
            },
            .list(\.trustedProxies, "trusted_proxies",
                  "CIDRs whose X-Forwarded-For/-Proto/-Host (and Forwarded, X-Real-IP, ...) are honoured, e.g. [10.0.0.0/8]",
                  Parse.cidr),
            .bool(\.proxyProtocol, "proxy_protocol",
                  "true: every connection begins with a PROXY v1/v2 header from one of trusted_proxies"),
            .bool(\.http2, "http2", "HTTP/2 beside HTTP/1.1: h2 by ALPN with tls, h2c (prior knowledge) without"),
            .value(\.workers, "workers", "event loops (threads); auto = one per online core, 1-256", Parse.workers),
            .value(\.upstreamTimeout, "upstream_timeout", "for the upstream's response", Parse.positiveDuration),
            .value(\.upstreamConnectTimeout, "upstream_connect_timeout",
                   "for the connection to the upstream; also the longest a request waits for one", Parse.positiveDuration),
            .value(\.upstreamIdleTimeout, "upstream_idle_timeout",
                   "an idle keep-alive connection to the upstream unused this long is closed (nginx's keepalive_timeout "
                       + "in an upstream block); keep it under the upstream's own idle timeout", Parse.positiveDuration),
            .value(\.upstreamMaxConnections, "upstream_max_connections",
                   "open connections to it at once, all workers together (nginx's max_conns); 0 = no cap of its own "
                       + "(max_connections bounds all upstreams together); beyond it requests queue, 503 after "
                       + "upstream_connect_timeout", Parse.integer(in: 0...1_000_000)),
            .bool(\.preserveHost, "preserve_host", "forward the client's Host instead of the upstream's"),
            .value(\.upstreamBalancing.balance, "upstream_balance",
                   "with several servers: round_robin (by weight) or least_connections (fewest busy, by weight)",
                   Parse.oneOf(Balance.self)),
            .value(\.upstreamBalancing.maxFails, "upstream_max_fails",
                   "connections a server refuses, resets or leaves unanswered in a row before it is taken out (0: never)",
                   Parse.integer(in: 0...100)),
            .value(\.upstreamBalancing.failTimeout, "upstream_fail_timeout",
                   "how long a server taken out stays out; then one request tries it again", Parse.positiveDuration),
            .value(\.upstreamBalancing.resolveInterval, "upstream_resolve_interval",
                   "a server given by name is looked up again this often (a Service's pods come and go)",
                   Parse.positiveDuration),
            .optional(\.resolver, "resolver", "DNS server for those lookups, e.g. 10.96.0.10:53; unset: /etc/resolv.conf's") {
                text, _ in ResolverAddress.parse(text)
            },
        ]
    }

    /// `tls`: the listener's certificate and key, both set or neither.
    public struct TLS: Sendable, Equatable {
        public var certFile: String
        public var keyFile: String
    }

    /// `tls`'s two files as declared keys; the schema makes a `TLS` of them when both are set.
    struct TLSFiles: Sendable, ConfigSection {
        var certFile: String?
        var keyFile: String?

        init() {}

        static let path = "tls"
        static let keys: [ConfigKey<Self>] = [
            .optional(\.certFile, "cert_file", "the chain, leaf first (PEM); ECDSA or RSA") { text, context in
                Parse.readableFile(baseDirectory: context.baseDirectory)(text)
            },
            .optional(\.keyFile, "key_file", "unencrypted PEM; SIGHUP reloads both (a bad pair keeps the old)") {
                text, context in Parse.readableFile(baseDirectory: context.baseDirectory)(text)
            },
        ]
    }

    public struct Apple: Sendable {
        public var teamID: String
        /// The Services ID of the web flow (the first of `apple.client_id`).
        public var clientID: String
        public var keyID: String
        /// Where the key came from (`apple.private_key_file`'s path), nil when given by `apple.private_key`.
        public var privateKeyFile: String?
        /// The PEM text of the ES256 signing key (parsed by the crypto module).
        public var privateKey: Secret
        public var scopes: [String]
        /// Bundle ids accepted on the native endpoint.
        public var nativeAudiences: [String]
        /// Apple's endpoints; the expected `iss` equals `baseURL.string`.
        public var baseURL: HTTPURL
        /// Extra trust anchors for talking to `baseURL`.
        public var caFile: String?
        public var jwksRefresh: TimeSpan
        public var clientSecretTTL: TimeSpan
        public var leeway: TimeSpan
        public var pkce: Bool
        public var nativeRequireNonce: Bool
        /// Android package names the web-flow relay (`{prefix}/android/callback`) may hand
        /// results to; empty: no relay endpoint.
        public var androidPackages: [String] = []
        /// Every Services ID of `apple.client_id`, `clientID` first: the others are accepted as
        /// the audience of Apple's notifications and, through the Android relay, of tokens
        /// whose code is exchanged with their own Services ID.
        public var clientIDs: [String] = []
    }
}

public enum LogFormat: String, Sendable, Equatable, CaseIterable {
    case json, text
}

public enum LogLevel: String, Sendable, Equatable, CaseIterable {
    case trace, debug, info, notice, warning, error, critical
}

/// An `access.allowed_redirect_hosts` entry; a bare `host` means port 443.
public struct RedirectHost: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public var description: String { "\(HostName.bracketed(host)):\(port)" }
}
