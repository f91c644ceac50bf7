extension Config {
    /// The keys of an entry of `upstreams` (`upstreams.<name>`), declared once for every name.
    /// Read over the top-level values (`init(inheriting:)`); its `tls` and `health_check` are
    /// `UpstreamTLS` and `HealthCheck` sections of their own, none inherited. The schema makes a
    /// `NamedUpstream` of it.
    struct UpstreamEntry: Sendable, ConfigSection {
        var servers: [UpstreamServer] = []
        var timeout: TimeSpan
        var connectTimeout: TimeSpan
        var maxConnections: Int
        var balancing: Balancing

        init() { self.init(inheriting: TopLevel()) }

        init(inheriting topLevel: TopLevel) {
            timeout = topLevel.upstreamTimeout
            connectTimeout = topLevel.upstreamConnectTimeout
            maxConnections = topLevel.upstreamMaxConnections
            balancing = topLevel.upstreamBalancing
        }

        static let path = "upstreams.<name>"
        static let keys: [ConfigKey<Self>] = [
            .servers(\.servers, "url", "as upstream; each has its own keep-alive pool"),
            .value(\.timeout, "upstream_timeout", "default: the top-level upstream_timeout", Parse.positiveDuration),
            .value(\.connectTimeout, "upstream_connect_timeout", "default: the top-level upstream_connect_timeout",
                   Parse.positiveDuration),
            .value(\.maxConnections, "max_connections", "default: the top-level upstream_max_connections (per server)",
                   Parse.integer(in: 0...1_000_000)),
            .value(\.balancing.balance, "balance",
                   "default: the top-level upstream_balance (url as a list of servers)", Parse.oneOf(Balance.self)),
            .value(\.balancing.maxFails, "max_fails", "default: the top-level upstream_max_fails",
                   Parse.integer(in: 0...100)),
            .value(\.balancing.failTimeout, "fail_timeout", "default: the top-level upstream_fail_timeout",
                   Parse.positiveDuration),
            .value(\.balancing.resolveInterval, "resolve_interval", "default: the top-level upstream_resolve_interval",
                   Parse.positiveDuration),
        ]
    }
}
