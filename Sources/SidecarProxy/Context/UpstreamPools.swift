import SidecarConfig
import SidecarEvent

/// A worker's upstreams: a group of servers per upstream (the top-level one first, then
/// `upstreams` in order), each server with its pool, and the connections they may open all together with the exchanges waiting for one
/// (`UpstreamBudget`, `UpstreamAdmission`).
final class UpstreamPools {
    private let loop: EventLoop
    private let reaper: Reaper
    let budget: UpstreamBudget
    /// Shared with the other workers and the admin loop: the metrics' `server` label of each
    /// pool, and the addresses names resolve to for `/readyz`.
    private let labels: ServerLabels
    private let readiness: Readiness
    /// The top-level upstream first, then `upstreams` in order: a pool per server each.
    private(set) var all: [UpstreamGroup] = []
    /// Each upstream's `upstream_timeout`, read per exchange without touching its group (a
    /// class reference taken from an array is retained and released at every read).
    private var timeoutsMs: [Int64] = []
    private var defaultTimeoutMs: Int64 = 60_000

    init(loop: EventLoop, reaper: Reaper, limit: Int, labels: ServerLabels, readiness: Readiness) {
        self.loop = loop
        self.reaper = reaper
        self.labels = labels
        self.readiness = readiness
        budget = UpstreamBudget(loop: loop, limit: limit)
        budget.pass = { [unowned self] in self.admitWaiters() }
    }

    /// The upstreams' servers and pools, kept across a reload where they stay the same (their
    /// idle connections go on serving); the others are retired.
    func apply(_ options: ProxyOptions, addresses: [[SocketAddress]]) {
        all = UpstreamGroup.rebuild(
            all, options: options, addresses: addresses, loop: loop, reaper: reaper, budget: budget,
            shared: UpstreamGroup.Shared(labels: labels, readiness: readiness))
        timeoutsMs = options.allUpstreams.map(\.timeoutMs)
        defaultTimeoutMs = options.upstreamTimeoutMs
    }

    /// Shutting down: idle connections close, busy ones close when they come back.
    func retireAll() {
        for group in all { group.retire() }
    }

    @inline(__always) func timeoutMs(_ index: Int) -> Int64 {
        index < timeoutsMs.count ? timeoutsMs[index] : defaultTimeoutMs
    }

    /// Upstream `index`; nil when a reload left fewer upstreams than the rule that chose it
    /// knew (the exchange then fails with 502 rather than go elsewhere).
    @inline(__always) func group(_ index: Int) -> UpstreamGroup? {
        index < all.count ? all[index] : nil
    }

    /// Every server's pool, all upstreams together.
    var servers: [UpstreamPool] { all.flatMap(\.servers) }

    /// Idle connections in all pools (looked at only when the budget is spent).
    var idleConnections: Int { all.reduce(0) { $0 + $1.servers.reduce(0) { $0 + $1.idleCount } } }

    /// Makes room under a cap: the oldest idle connection of `pool`, else of the pool with most.
    func closeIdle(preferring pool: UpstreamPool) {
        if pool.closeIdle(1) > 0 { return }
        servers.max { $0.idleCount < $1.idleCount }?.closeIdle(1)
    }

    /// A connection freed: the waiters that can have one now proceed, oldest first.
    private func admitWaiters() {
        budget.waiters.admit(mayProceed: { $0.mayLeaveUpstreamQueue }, proceed: { $0.leftUpstreamQueue() })
    }

    /// A worker's part of a cap for all workers together (0: none), rounded up.
    static func share(of cap: Int, workers: Int) -> Int {
        cap <= 0 ? 0 : max(1, (cap + max(1, workers) - 1) / max(1, workers))
    }
}
