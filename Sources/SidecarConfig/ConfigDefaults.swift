/// What a key of `sidecar.yaml` is when the file leaves it out, written once: the schema
/// reads these, and the proxy's options start from them, so options built in code (tests,
/// the demo) behave as an empty file would.
public enum ConfigDefaults {
    public static let listen = ListenAddress.tcp(host: "127.0.0.1", port: 8080)
    public static let adminListen = ListenAddress.tcp(host: "127.0.0.1", port: 9090)
    public static let upstreamTimeout = TimeSpan.seconds(60)
    public static let upstreamConnectTimeout = TimeSpan.seconds(5)
    public static let routePrefix = "/.auth"
    public static let accessLog = true
    /// `tracing.trust_incoming`: a client's `traceparent` is continued whoever sent it.
    public static let traceTrustIncoming = true
    /// `tracing.sample_ratio`: every new trace is sampled.
    public static let traceSampleRatio = 1.0
    /// `tracing.max_incoming_sampled_per_second`: a client's sampled flag is honoured at most
    /// this often (all workers together).
    public static let traceMaxIncomingSampledPerSecond = 100
    /// The collector's path when `tracing.otlp_endpoint` names none (OTLP/HTTP's traces path).
    public static let otlpTracesPath = "/v1/traces"

    /// `headers.*`: the request headers that carry the identity, by setting.
    public static let identityHeaders: [(key: String, name: String)] = [
        ("user_id", "X-Auth-User-Id"), ("email", "X-Auth-Email"), ("email_verified", "X-Auth-Email-Verified"),
        ("private_email", "X-Auth-Private-Email"), ("name", "X-Auth-Name"), ("assertion", "X-Auth-Assertion"),
    ]

    public static func identityHeader(_ key: String) -> String {
        identityHeaders.first { $0.key == key }?.name ?? ""
    }

    // `session.*`
    /// Sessions each worker keeps opened (rounded up to a power of two): under 1 KB each.
    public static let sessionCacheEntries = 8192

    // `limits.*`
    public static let maxHeaderBytes = 16 << 10
    public static let maxStreams = 100
    public static let http2 = true
    public static let maxBodyBytes = 64 << 10
    /// 0: unlimited.
    public static let maxUploadBytes = 0
    public static let headerTimeout = TimeSpan.seconds(10)
    public static let idleTimeout = TimeSpan.seconds(60)
    public static let maxConnections = 10_000
    /// `limits.upstream_connections_per_client`: upstream connections one client connection
    /// holds at once (an HTTP/2 connection's streams beyond it queue); a third of `max_streams`.
    public static let upstreamConnectionsPerClient = 32
    /// `upstream_max_connections` (and `upstreams.<name>.max_connections`): 0 = no cap of
    /// the upstream's own; the descriptor budget (`max_connections` per worker) still bounds it.
    public static let upstreamMaxConnections = 0
    public static let responseBuffer = 64 << 10
    public static let minBodyRate = 256
}
