import Synchronization

/// Counters one worker keeps without atomics on its own thread and publishes about once a
/// second (only when something changed) for the admin listener's `/metrics`.
struct WorkerMetrics: Sendable {
    /// Upstream latency histogram bounds in milliseconds (+Inf is implicit).
    static let latencyBoundsMs: [Int64] = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000]
    enum Route: Int, CaseIterable { case upstream = 0, sidecar = 1 }

    /// [route][status class 1xx…5xx, other]
    var requests = [UInt64](repeating: 0, count: Route.allCases.count * 6)
    var latencyBuckets = [UInt64](repeating: 0, count: latencyBoundsMs.count + 1)
    var latencySumMs: UInt64 = 0
    var latencyCount: UInt64 = 0
    var openConnections = 0
    var upstreamConnectFailures: UInt64 = 0

    mutating func recordRequest(route: Route, status: Int) {
        let statusClass = (1...5).contains(status / 100) ? status / 100 - 1 : 5
        requests[route.rawValue * 6 + statusClass] &+= 1
    }

    mutating func recordUpstreamLatency(ms: Int64) {
        var index = 0
        while index < Self.latencyBoundsMs.count && ms > Self.latencyBoundsMs[index] { index += 1 }
        latencyBuckets[index] &+= 1
        latencySumMs &+= UInt64(max(0, ms))
        latencyCount &+= 1
    }

    static func + (a: WorkerMetrics, b: WorkerMetrics) -> WorkerMetrics {
        var sum = a
        for i in sum.requests.indices { sum.requests[i] &+= b.requests[i] }
        for i in sum.latencyBuckets.indices { sum.latencyBuckets[i] &+= b.latencyBuckets[i] }
        sum.latencySumMs &+= b.latencySumMs
        sum.latencyCount &+= b.latencyCount
        sum.openConnections += b.openConnections
        sum.upstreamConnectFailures &+= b.upstreamConnectFailures
        return sum
    }
}

/// The latest published counters of every worker.
final class MetricsBoard: Sendable {
    private let slots: Mutex<[WorkerMetrics]>

    init(workers: Int) { slots = Mutex([WorkerMetrics](repeating: WorkerMetrics(), count: workers)) }

    func publish(_ metrics: WorkerMetrics, worker: Int) {
        slots.withLock { $0[worker] = metrics }
    }

    /// Prometheus text exposition format.
    func render() -> String {
        let total = slots.withLock { $0.reduce(WorkerMetrics(), +) }
        var out = "# HELP sidecar_requests_total Requests answered, by who answered and status class.\n"
        out += "# TYPE sidecar_requests_total counter\n"
        for route in WorkerMetrics.Route.allCases {
            let name = route == .upstream ? "upstream" : "sidecar"
            for statusClass in 0..<6 {
                let code = statusClass < 5 ? "\(statusClass + 1)xx" : "other"
                out += "sidecar_requests_total{route=\"\(name)\",code=\"\(code)\"} \(total.requests[route.rawValue * 6 + statusClass])\n"
            }
        }
        out += "# HELP sidecar_upstream_response_seconds Time from sending a request upstream to its response head.\n"
        out += "# TYPE sidecar_upstream_response_seconds histogram\n"
        var cumulative: UInt64 = 0
        for (i, bound) in WorkerMetrics.latencyBoundsMs.enumerated() {
            cumulative &+= total.latencyBuckets[i]
            out += "sidecar_upstream_response_seconds_bucket{le=\"\(Double(bound) / 1000)\"} \(cumulative)\n"
        }
        cumulative &+= total.latencyBuckets[WorkerMetrics.latencyBoundsMs.count]
        out += "sidecar_upstream_response_seconds_bucket{le=\"+Inf\"} \(cumulative)\n"
        out += "sidecar_upstream_response_seconds_sum \(Double(total.latencySumMs) / 1000)\n"
        out += "sidecar_upstream_response_seconds_count \(total.latencyCount)\n"
        out += "# HELP sidecar_upstream_connect_failures_total Upstream connections refused, reset or timed out.\n"
        out += "# TYPE sidecar_upstream_connect_failures_total counter\n"
        out += "sidecar_upstream_connect_failures_total \(total.upstreamConnectFailures)\n"
        out += "# HELP sidecar_open_connections Client connections open now.\n"
        out += "# TYPE sidecar_open_connections gauge\n"
        out += "sidecar_open_connections \(total.openConnections)\n"
        return out
    }
}
