import SidecarHTTP2
/// Counters one worker keeps without atomics on its own thread and publishes about once a
/// second (only when something changed) for the admin listener's `/metrics`. Every family is
/// a fixed-size array indexed by a label enum: recording never allocates (except the one
/// copy-on-write after each publish) and the label sets stay bounded.
struct WorkerMetrics: Sendable {
    enum Route: Int, CaseIterable { case upstream = 0, sidecar = 1 }

    /// [route][status class 1xx…5xx, other]
    var requests = [UInt64](repeating: 0, count: Route.allCases.count * 6)
    /// With `sites`: [site index][status class], the site the request's host named.
    var siteRequests = [UInt64](repeating: 0, count: maxUpstreams * 6)
    /// Requests answered [over HTTP/1.x, over HTTP/2].
    var requestsByProtocol: [UInt64] = [0, 0]
    /// At most this many upstreams (the top-level one and `upstreams`), each a label value.
    static let maxUpstreams = 33
    /// [server slot: `ServerLabels`]
    var upstreamLatency = [LatencyHistogram](repeating: LatencyHistogram(), count: ServerLabels.slots)
    /// [Route]: from a request's first byte to the end of its answer, as the client saw it.
    var requestDuration = [LatencyHistogram](repeating: LatencyHistogram(), count: Route.allCases.count)
    var openConnections = 0
    /// [server slot: `ServerLabels`]
    var upstreamConnectFailures = [UInt64](repeating: 0, count: ServerLabels.slots)
    /// Accepts refused by the kernel for lack of file descriptors (EMFILE/ENFILE).
    var acceptDescriptorFailures: UInt64 = 0
    /// [LoginOutcome index]
    var logins = [UInt64](repeating: 0, count: LoginOutcome.labels.count)
    /// [NativeOutcome index]
    var nativeSignIns = [UInt64](repeating: 0, count: NativeOutcome.labels.count)
    /// [NativeRefreshOutcome index]
    var nativeRefreshes = [UInt64](repeating: 0, count: NativeRefreshOutcome.labels.count)
    /// [SessionCarrier][SessionOutcome]
    var sessions = [UInt64](repeating: 0, count: SessionCarrier.allCases.count * SessionOutcome.allCases.count)
    /// Session credentials looked up in the worker's session cache [found, not found]: a
    /// request not found opens its value (base64, AES-GCM, decode).
    var sessionCache: [UInt64] = [0, 0]
    /// [ResealReason]
    var reseals = [UInt64](repeating: 0, count: ResealReason.allCases.count)
    /// [ok, error]
    var jwksRefreshes: [UInt64] = [0, 0]
    /// [NotificationOutcome]
    var notifications = [UInt64](repeating: 0, count: NotificationOutcome.allCases.count)
    /// [delivered, retried]
    var forwards: [UInt64] = [0, 0]
    /// [AccountDeletionOutcome]
    var accountDeletions = [UInt64](repeating: 0, count: AccountDeletionOutcome.allCases.count)
    /// [RevalidationOutcome]
    var revalidations = [UInt64](repeating: 0, count: RevalidationOutcome.allCases.count)
    /// [IncompleteReason]
    var incomplete = [UInt64](repeating: 0, count: IncompleteReason.allCases.count)
    /// [ProxyHeaderRefusal]
    var proxyHeaderRefusals = [UInt64](repeating: 0, count: ProxyHeaderRefusal.allCases.count)
    /// HTTP/2 [connections, streams].
    var http2: [UInt64] = [0, 0]
    /// HTTP/2 connections ended with GOAWAY for misbehaving, by `H2Session.Refusal` (in `allCases` order).
    var http2Refusals = [UInt64](repeating: 0, count: H2Session.Refusal.allCases.count)
    /// [AppleCall]
    var appleLatency = [LatencyHistogram](repeating: LatencyHistogram(), count: AppleCall.allCases.count)

    mutating func recordRequest(route: Route, status: Int, http2: Bool) {
        let statusClass = (1...5).contains(status / 100) ? status / 100 - 1 : 5
        requests[route.rawValue * 6 + statusClass] &+= 1
        requestsByProtocol[http2 ? 1 : 0] &+= 1
    }

    mutating func recordSiteRequest(_ site: Int, status: Int) {
        guard site < Self.maxUpstreams else { return }
        siteRequests[site * 6 + ((1...5).contains(status / 100) ? status / 100 - 1 : 5)] &+= 1
    }

    mutating func recordSession(_ outcome: SessionOutcome, via carrier: SessionCarrier) {
        sessions[carrier.rawValue * SessionOutcome.allCases.count + outcome.rawValue] &+= 1
    }

    func sessions(_ outcome: SessionOutcome, via carrier: SessionCarrier) -> UInt64 {
        sessions[carrier.rawValue * SessionOutcome.allCases.count + outcome.rawValue]
    }

    static func + (a: WorkerMetrics, b: WorkerMetrics) -> WorkerMetrics {
        var sum = a
        add(b.requests, to: &sum.requests)
        add(b.requestsByProtocol, to: &sum.requestsByProtocol)
        add(b.siteRequests, to: &sum.siteRequests)
        add(b.sessionCache, to: &sum.sessionCache)
        for i in sum.upstreamLatency.indices { sum.upstreamLatency[i] = a.upstreamLatency[i] + b.upstreamLatency[i] }
        for i in sum.requestDuration.indices { sum.requestDuration[i] = a.requestDuration[i] + b.requestDuration[i] }
        sum.openConnections += b.openConnections
        add(b.upstreamConnectFailures, to: &sum.upstreamConnectFailures)
        sum.acceptDescriptorFailures &+= b.acceptDescriptorFailures
        add(b.logins, to: &sum.logins)
        add(b.nativeSignIns, to: &sum.nativeSignIns)
        add(b.nativeRefreshes, to: &sum.nativeRefreshes)
        add(b.sessions, to: &sum.sessions)
        add(b.reseals, to: &sum.reseals)
        add(b.jwksRefreshes, to: &sum.jwksRefreshes)
        add(b.incomplete, to: &sum.incomplete)
        add(b.proxyHeaderRefusals, to: &sum.proxyHeaderRefusals)
        add(b.http2, to: &sum.http2)
        add(b.http2Refusals, to: &sum.http2Refusals)
        add(b.notifications, to: &sum.notifications)
        add(b.forwards, to: &sum.forwards)
        add(b.accountDeletions, to: &sum.accountDeletions)
        add(b.revalidations, to: &sum.revalidations)
        for i in sum.appleLatency.indices { sum.appleLatency[i] = a.appleLatency[i] + b.appleLatency[i] }
        return sum
    }

    private static func add(_ counts: [UInt64], to sum: inout [UInt64]) {
        for i in sum.indices { sum[i] &+= counts[i] }
    }
}

/// A latency histogram in milliseconds, exposed in seconds.
struct LatencyHistogram: Sendable {
    /// Upper bounds in milliseconds (+Inf is implicit).
    static let boundsMs: [Int64] = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000]

    /// Per bucket, not cumulative; the last one is +Inf.
    var buckets = [UInt64](repeating: 0, count: boundsMs.count + 1)
    var sumMs: UInt64 = 0
    var count: UInt64 = 0

    mutating func record(ms: Int64) {
        var index = 0
        while index < Self.boundsMs.count && ms > Self.boundsMs[index] { index += 1 }
        buckets[index] &+= 1
        sumMs &+= UInt64(max(0, ms))
        count &+= 1
    }

    static func + (a: LatencyHistogram, b: LatencyHistogram) -> LatencyHistogram {
        var sum = a
        for i in sum.buckets.indices { sum.buckets[i] &+= b.buckets[i] }
        sum.sumMs &+= b.sumMs
        sum.count &+= b.count
        return sum
    }
}
