extension Config {
    /// `limits.*`: what one request, connection or client address may take.
    public struct Limits: Sendable, Equatable, ConfigSection {
        public var maxHeaderBytes = 16 << 10
        public var maxBodyBytes = 64 << 10
        /// 0 = unlimited.
        public var maxUploadBytes = 0
        public var headerTimeout = TimeSpan.seconds(10)
        public var idleTimeout = TimeSpan.seconds(60)
        public var maxConnections = 10_000
        /// `max_connections` was not set: `run` lowers it to what the descriptor limit allows
        /// instead of warning about a number the operator never chose.
        public var maxConnectionsIsDefault = true
        /// The most of one exchange's data held for the slower side, in each direction.
        public var responseBuffer = 64 << 10
        /// Bytes per second a request body must average from 10 s after its first byte; 0 = off.
        public var minBodyRate = 256
        /// Requests per client address to the endpoints that store a single-use key or call Apple.
        public var signInRate = SignInRate.default
        /// Concurrent streams on one HTTP/2 connection.
        public var maxStreams = 100
        /// Upstream connections one client connection holds at once (an HTTP/2 connection's
        /// streams beyond it queue): a third of `maxStreams`.
        public var upstreamConnectionsPerClient = 32

        public init() {}

        static let path = "limits"
        static let keys: [ConfigKey<Self>] = [
            .value(\.maxHeaderBytes, "max_header_bytes", "larger request heads get 431",
                   Parse.byteSize(in: (1 << 10)...(1 << 20))),
            .value(\.maxBodyBytes, "max_body_bytes",
                   "bodies the sidecar reads itself (each endpoint caps lower: 16KiB)", Parse.byteSize(in: (1 << 10)...(1 << 30))),
            .value(\.maxUploadBytes, "max_upload_bytes", "proxied request bodies (streamed); 0 = unlimited", Parse.byteSize),
            .value(\.headerTimeout, "header_timeout", "total time for a request head, not reset per line",
                   Parse.positiveDuration),
            .value(\.idleTimeout, "idle_timeout",
                   "close connections with no request in progress; also the longest a client may read nothing of a "
                       + "response (nginx's send_timeout)", Parse.positiveDuration),
            .value(\.maxConnections, "max_connections",
                   "unset: 10000 or what the descriptor limit allows (2 each + a reserve: half the limit, at most 128); "
                       + "set: warned if it cannot fit", Parse.integer(in: 1...1_000_000)),
            .value(\.responseBuffer, "response_buffer", "the most of one exchange held for a slow reader, each direction",
                   Parse.byteSize(in: (4 << 10)...(64 << 20))),
            .value(\.maxStreams, "max_streams", "concurrent HTTP/2 streams per connection (1-1000); more are refused",
                   Parse.integer(in: 1...1000)),
            .value(\.upstreamConnectionsPerClient, "upstream_connections_per_client",
                   "upstream connections one client connection (its HTTP/2 streams together) holds at once (1-1000); "
                       + "its other streams queue", Parse.integer(in: 1...1000)),
            .value(\.minBodyRate, "min_body_rate",
                   "bytes/s a request body must average from 10 s after its first byte, else 408 and the upstream "
                       + "exchange ends (0 disables)", Parse.byteSize(in: 0...(1 << 30))),
            .value(\.signInRate.rate, "sign_in_rate",
                   "per client address (after trusted_proxies) to login, callback, native, native/nonce, "
                       + "native/refresh, android/callback, revoke: N/s, N/m or N/h; beyond it 429 with Retry-After; "
                       + "0 disables", SignInRate.parseRate),
            .value(\.signInRate.burst, "sign_in_burst", "requests an address may make at once after a quiet spell",
                   Parse.integer(in: 1...SignInRate.maximumCount)),
        ]
    }
}
