import SidecarConfig
import SidecarEvent

/// A worker's upstreams: one pool per upstream (the top-level one first, then `upstreams` in
/// order), and the connections they may open all together with the exchanges waiting for one
/// (`UpstreamBudget`, `UpstreamAdmission`).
final class UpstreamPools {
    private let loop: EventLoop
    private let reaper: Reaper
    let budget: UpstreamBudget
    private(set) var all: [UpstreamPool] = []
    /// Each upstream's `upstream_timeout`, read per exchange without touching its pool (a
    /// class reference taken from an array is retained and released at every read).
    private var timeoutsMs: [Int64] = []
    private var defaultTimeoutMs: Int64 = 60_000

    init(loop: EventLoop, reaper: Reaper, limit: Int) {
        self.loop = loop
        self.reaper = reaper
        budget = UpstreamBudget(loop: loop, limit: limit)
        budget.pass = { [unowned self] in self.admitWaiters() }
    }

    /// A pool per upstream, kept across a reload where its address and size stay the same
    /// (its idle connections go on serving); the others are retired.
    func apply(_ options: ProxyOptions, addresses: [SocketAddress]) {
        var pools: [UpstreamPool] = []
        for (index, (target, address)) in zip(options.allUpstreams, addresses).enumerated() {
            let pool: UpstreamPool
            if index < all.count, all[index].address == address, all[index].capacity == options.upstreamPoolSize {
                pool = all[index]
            } else {
                if index < all.count { all[index].retire() }
                pool = UpstreamPool(loop: loop, address: address, capacity: options.upstreamPoolSize, reaper: reaper, budget: budget)
            }
            pool.limit = Self.share(of: target.maxConnections, workers: options.config.workers)
            pool.text = Self.describe(target.upstream)
            pool.name = options.upstreamName(index)
            pool.timeoutMs = target.timeoutMs
            pool.connectTimeoutMs = target.connectTimeoutMs
            pools.append(pool)
        }
        for stale in all.dropFirst(pools.count) { stale.retire() }
        all = pools
        timeoutsMs = pools.map(\.timeoutMs)
        defaultTimeoutMs = options.upstreamTimeoutMs
    }

    /// Shutting down: idle connections close, busy ones close when they come back.
    func retireAll() {
        for pool in all { pool.retire() }
    }

    @inline(__always) func timeoutMs(_ index: Int) -> Int64 {
        index < timeoutsMs.count ? timeoutsMs[index] : defaultTimeoutMs
    }

    /// The pool of upstream `index`; nil when a reload left fewer upstreams than the rule
    /// that chose it knew (the exchange then fails with 502 rather than go elsewhere).
    @inline(__always) func pool(_ index: Int) -> UpstreamPool? {
        index < all.count ? all[index] : nil
    }

    /// Idle connections in all pools (looked at only when the budget is spent).
    var idleConnections: Int { all.reduce(0) { $0 + $1.idleCount } }

    /// Makes room under a cap: the oldest idle connection of `pool`, else of the pool with most.
    func closeIdle(preferring pool: UpstreamPool) {
        if pool.closeIdle(1) > 0 { return }
        all.max { $0.idleCount < $1.idleCount }?.closeIdle(1)
    }

    /// A connection freed: the waiters that can have one now proceed, oldest first.
    private func admitWaiters() {
        budget.waiters.admit(mayProceed: { $0.mayLeaveUpstreamQueue }, proceed: { $0.leftUpstreamQueue() })
    }

    /// A worker's part of a cap for all workers together (0: none), rounded up.
    static func share(of cap: Int, workers: Int) -> Int {
        cap <= 0 ? 0 : max(1, (cap + max(1, workers) - 1) / max(1, workers))
    }

    private static func describe(_ upstream: Upstream) -> [UInt8] {
        switch upstream {
        case .http(let host, let port, _): return Array((host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)").utf8)
        case .unix(let path): return Array("unix:\(path)".utf8)
        }
    }
}
