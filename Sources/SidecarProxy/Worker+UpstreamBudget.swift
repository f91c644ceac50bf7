import Logging

/// The worker's side of the caps on upstream connections (`UpstreamAdmission`).
extension Worker {
    /// A worker's part of a cap for all workers together (0: none), rounded up.
    static func share(of cap: Int, workers: Int) -> Int {
        cap <= 0 ? 0 : max(1, (cap + max(1, workers) - 1) / max(1, workers))
    }

    /// Idle connections in all pools (looked at only when the budget is spent).
    var idleUpstreamConnections: Int { upstreams.reduce(0) { $0 + $1.servers.reduce(0) { $0 + $1.idleCount } } }

    /// Makes room under a cap: the oldest idle connection of `pool`, else of the pool with most.
    func closeIdleUpstream(preferring pool: UpstreamPool) {
        if pool.closeIdle(1) > 0 { return }
        upstreams.flatMap(\.servers).max { $0.idleCount < $1.idleCount }?.closeIdle(1)
    }

    /// A connection freed: the waiters that can have one now proceed, oldest first.
    func admitUpstreamWaiters() {
        upstreamBudget.waiters.admit(mayProceed: { $0.mayLeaveUpstreamQueue }, proceed: { $0.leftUpstreamQueue() })
    }

    /// An exchange found no upstream connection within its connect deadline (503): logged at
    /// most once per interval, as connect failures are.
    func logUpstreamBusy(_ upstream: UpstreamGroup?) {
        guard let suppressed = upstreamBusyLog.shouldLog(nowMs: nowMs) else { return }
        let servers = upstream?.servers ?? []
        var metadata: Logger.Metadata = [
            "upstream": "\(String(decoding: upstream?.text ?? [], as: UTF8.self))",
            "upstream_name": "\(upstream?.name ?? "default")",
            "open": .stringConvertible(servers.reduce(0) { $0 + $1.open }),
            "limit": .stringConvertible(servers.first?.limit ?? 0),
            "worker_open": .stringConvertible(upstreamBudget.open), "worker_limit": .stringConvertible(upstreamBudget.limit),
            "waiting": .stringConvertible(upstreamBudget.waiters.count),
        ]
        if suppressed > 0 { metadata["suppressed"] = .stringConvertible(suppressed) }
        Logger(label: "sidecar").warning(
            "\(Self.upstreamBusyMessage)", metadata: metadata)
    }

    static let upstreamBusyMessage = "no upstream connection free within upstream_connect_timeout: answered 503 "
        + "(a cap is reached: upstream_max_connections, limits.upstream_connections_per_client or the descriptor budget)"
}
