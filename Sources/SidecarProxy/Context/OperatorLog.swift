import Glibc
import Logging
import SidecarEvent
import SidecarHTTP2

/// The lines a worker's connections write for the operator about failures that can come in
/// floods (an upstream down, a scanner, an abusive HTTP/2 client): each kind at most once per
/// interval per worker, with the number not logged in between, as nginx logs connect errors.
final class OperatorLog {
    private let loopRef: Unmanaged<EventLoop>
    private let metrics: MetricsRecorder
    private var upstreamFailures = RateLimitedLog(intervalMs: 10_000)
    private var upstreamBusy = RateLimitedLog(intervalMs: 10_000)
    /// Connections refused before their PROXY protocol header was read (`proxy_protocol`).
    private var proxyHeaderRefusals = RateLimitedLog(intervalMs: 10_000)
    private var http2Refusals = RateLimitedLog(intervalMs: 10_000)
    /// Request paths refused before any decision (an encoded slash, a bad escape).
    private var pathRefusals = RateLimitedLog(intervalMs: 10_000)

    init(loop: EventLoop, metrics: MetricsRecorder) {
        loopRef = .passUnretained(loop)
        self.metrics = metrics
    }

    private var nowMs: Int64 { loopRef._withUnsafeGuaranteedRef { $0.nowMilliseconds } }

    /// A failure to reach the upstream, with its address and errno.
    func upstreamFailed(_ stage: StaticString, errno code: Int32, upstream: UpstreamPool?) {
        guard let suppressed = upstreamFailures.shouldLog(nowMs: nowMs) else { return }
        var metadata: Logger.Metadata = [
            "upstream": "\(String(decoding: upstream?.text ?? [], as: UTF8.self))",
            "upstream_name": "\(upstream?.name ?? "default")",
            "errno": .stringConvertible(code),
            "error": "\(String(cString: strerror(code)))",
        ]
        if suppressed > 0 { metadata["suppressed"] = .stringConvertible(suppressed) }
        Logger(label: "sidecar").error("upstream \(stage) failed (\(code): \(String(cString: strerror(code))))", metadata: metadata)
    }

    /// An exchange found no upstream connection within its connect deadline (503).
    func upstreamBusy(_ upstream: UpstreamGroup?, budget: UpstreamBudget) {
        guard let suppressed = upstreamBusy.shouldLog(nowMs: nowMs) else { return }
        let servers = upstream?.servers ?? []
        var metadata: Logger.Metadata = [
            "upstream": "\(String(decoding: upstream?.text ?? [], as: UTF8.self))",
            "upstream_name": "\(upstream?.name ?? "default")",
            "open": .stringConvertible(servers.reduce(0) { $0 + $1.open }),
            "limit": .stringConvertible(servers.first?.limit ?? 0),
            "worker_open": .stringConvertible(budget.open), "worker_limit": .stringConvertible(budget.limit),
            "waiting": .stringConvertible(budget.waiters.count),
        ]
        if suppressed > 0 { metadata["suppressed"] = .stringConvertible(suppressed) }
        Logger(label: "sidecar").warning("\(Self.upstreamBusyMessage)", metadata: metadata)
    }

    static let upstreamBusyMessage = "no upstream connection free within upstream_connect_timeout: answered 503 "
        + "(a cap is reached: upstream_max_connections, limits.upstream_connections_per_client or the descriptor budget)"

    /// Counts a connection closed for its PROXY protocol header and logs it. One the peer
    /// closed itself is only counted: a balancer's TCP health check does just that.
    func refusedProxyHeader(_ reason: ProxyHeaderRefusal, peer: String, detail: String) {
        metrics.recordProxyHeaderRefusal(reason)
        guard reason != .closed, let suppressed = proxyHeaderRefusals.shouldLog(nowMs: nowMs) else { return }
        var metadata: Logger.Metadata = ["peer": "\(peer)", "reason": "\(reason.label)"]
        if suppressed > 0 { metadata["suppressed"] = .stringConvertible(suppressed) }
        Logger(label: "sidecar").info("connection closed before its PROXY protocol header was read: \(detail)",
                                      metadata: metadata)
    }

    /// An HTTP/2 connection ended for exceeding a bound.
    func http2Refused(_ reason: H2Session.Refusal, peer: [UInt8]) {
        guard let suppressed = http2Refusals.shouldLog(nowMs: nowMs) else { return }
        var metadata: Logger.Metadata = [
            "peer": "\(String(decoding: peer, as: UTF8.self))", "reason": "\(reason.rawValue)",
        ]
        if suppressed > 0 { metadata["suppressed"] = .stringConvertible(suppressed) }
        Logger(label: "sidecar").warning("HTTP/2 connection ended with GOAWAY (ENHANCE_YOUR_CALM)", metadata: metadata)
    }

    /// A request path refused with 400 before any decision; `describe` builds the line's
    /// metadata only when it is written.
    func pathRefused(_ describe: () -> Logger.Metadata) {
        guard let suppressed = pathRefusals.shouldLog(nowMs: nowMs) else { return }
        var metadata = describe()
        if suppressed > 0 { metadata["suppressed"] = .stringConvertible(suppressed) }
        Logger(label: "sidecar").info("request path refused with 400", metadata: metadata)
    }
}
