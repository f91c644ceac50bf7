import Logging
import SidecarConfig
import SidecarEvent

/// One upstream of a worker: its servers, a pool each, and which one the next exchange goes
/// to. The exchange asks for a server and never knows which answered except to log it.
final class UpstreamGroup {
    let servers: [UpstreamPool]
    let balancing: Config.Balancing
    /// `default` or its name in `upstreams`.
    let name: String
    /// As access lines name the upstream when no server is known (its servers, comma-separated).
    let text: [UInt8]
    let connectTimeoutMs: Int64
    /// Smooth weighted round robin (nginx's): each pick adds every candidate's weight to its
    /// credit, takes the one with most, and charges it the total.
    private var credit: [Int]
    /// Where least_connections starts looking, so that ties rotate.
    private var next = 0

    init(name: String, servers: [UpstreamPool], balancing: Config.Balancing, connectTimeoutMs: Int64) {
        self.name = name
        self.servers = servers
        self.balancing = balancing
        self.connectTimeoutMs = connectTimeoutMs
        credit = [Int](repeating: 0, count: servers.count)
        text = Array(servers.map(\.text).joined(separator: Array(",".utf8)))
    }

    /// `health_check`: its servers asked on this loop every interval; nil without one.
    private var healthCheck: UpstreamHealthCheck?

    /// Closes the idle connections of every server and refuses returning ones (shutdown).
    func retire() {
        healthCheck?.stop()
        for server in servers { server.retire() }
    }

    deinit { healthCheck?.stop() }

    /// The server for the next exchange: a healthy one (not `avoiding`, the one that just failed
    /// it) that `admits` it now if there is one, else a healthy one it will wait for, else the
    /// one whose time out ends first. One server: that one, with no further look.
    @inline(__always)
    func choose(avoiding: UpstreamPool? = nil, nowMs: Int64, admits: (UpstreamPool) -> Bool) -> UpstreamPool {
        if servers.count == 1 { return servers[0] }
        return chooseAmongSeveral(avoiding: avoiding, nowMs: nowMs, admits: admits)
    }

    private func chooseAmongSeveral(avoiding: UpstreamPool?, nowMs: Int64, admits: (UpstreamPool) -> Bool) -> UpstreamPool {
        let window = max(connectTimeoutMs, 1_000) * 2
        var healthy = servers.indices.filter { servers[$0] !== avoiding && servers[$0].health.isAvailable(nowMs: nowMs, tryWindowMs: window) }
        if healthy.isEmpty {
            // All out: the one back soonest is tried rather than no one.
            let soonest = servers.indices.filter { servers[$0] !== avoiding }.min { lhs, rhs in
                Self.outUntil(servers[lhs]) < Self.outUntil(servers[rhs])
            }
            healthy = [soonest ?? 0]
        }
        let admitting = healthy.filter { admits(servers[$0]) }
        let candidates = admitting.isEmpty ? healthy : admitting
        let index = balancing.balance == .leastConnections ? fewestBusy(candidates) : roundRobin(candidates)
        servers[index].health.chosen(nowMs: nowMs)
        return servers[index]
    }

    private func roundRobin(_ candidates: [Int]) -> Int {
        var total = 0
        var best = candidates[0]
        for index in candidates {
            credit[index] += servers[index].weight
            total += servers[index].weight
            if credit[index] > credit[best] { best = index }
        }
        credit[best] -= total
        return best
    }

    /// Fewest busy connections for its weight (busy/weight compared without dividing); ties
    /// go round.
    private func fewestBusy(_ candidates: [Int]) -> Int {
        next = (next + 1) % servers.count
        var best: Int?
        for offset in 0..<candidates.count {
            let index = candidates[(offset + next) % candidates.count]
            guard let current = best else {
                best = index
                continue
            }
            if servers[index].busyCount * servers[current].weight < servers[current].busyCount * servers[index].weight {
                best = index
            }
        }
        return best ?? candidates[0]
    }

    private static func outUntil(_ pool: UpstreamPool) -> Int64 {
        if case .out(let until) = pool.health.state { return until }
        return .min
    }
}

extension UpstreamGroup {
    /// The groups for `options`, each server's pool kept from `old` where its address, TLS
    /// context and size stay the same (its idle connections go on serving); the others' pools
    /// are retired (idle connections close, busy ones finish first).
    static func rebuild(
        _ old: [UpstreamGroup], options: ProxyOptions, addresses: [[SocketAddress]], loop: EventLoop, reaper: Reaper,
        budget: UpstreamBudget
    ) -> [UpstreamGroup] {
        var kept = Set<ObjectIdentifier>()
        var groups: [UpstreamGroup] = []
        for (index, (plan, serverAddresses)) in zip(options.allUpstreams, addresses).enumerated() {
            let tls = index < options.upstreamTLS.count ? options.upstreamTLS[index] : nil
            let previous = index < old.count ? old[index].servers : []
            var pools: [UpstreamPool] = []
            for (server, address) in zip(plan.servers, serverAddresses) {
                let reusable = previous.first { pool in
                    pool.address == address && pool.capacity == options.upstreamPoolSize && pool.tls === tls
                        && !kept.contains(ObjectIdentifier(pool))
                }
                let pool = reusable ?? UpstreamPool(
                    loop: loop, address: address, capacity: options.upstreamPoolSize, reaper: reaper, budget: budget,
                    tls: tls, host: server.target.host ?? "")
                kept.insert(ObjectIdentifier(pool))
                pool.limit = Worker.share(of: plan.maxConnections, workers: options.config.workers)
                pool.text = describe(server.target)
                pool.name = options.upstreamName(index)
                pool.timeoutMs = plan.timeoutMs
                pool.connectTimeoutMs = plan.connectTimeoutMs
                pool.weight = server.weight
                pool.balancing = plan.servers.count > 1 ? plan.balancing : nil
                pools.append(pool)
            }
            let group = UpstreamGroup(
                name: options.upstreamName(index), servers: pools, balancing: plan.balancing,
                connectTimeoutMs: plan.connectTimeoutMs)
            if plan.healthCheck.path != nil {
                group.healthCheck = UpstreamHealthCheck(
                    loop: loop, servers: pools, hosts: plan.servers.map { Self.hostField($0.target) }, settings: plan.healthCheck)
            }
            groups.append(group)
        }
        for pool in old.flatMap(\.servers) where !kept.contains(ObjectIdentifier(pool)) { pool.retire() }
        return groups
    }

    /// The `Host` a health check sends to a server.
    static func hostField(_ upstream: Upstream) -> String {
        switch upstream {
        case .http(let host, let port, _), .https(let host, let port, _):
            let bracketed = host.contains(":") ? "[\(host)]" : host
            return port == (upstream.isTLS ? 443 : 80) ? bracketed : "\(bracketed):\(port)"
        case .unix: return "localhost"
        }
    }

    /// As access lines and error messages name a server (`127.0.0.1:3000`, `https://app:8443`).
    static func describe(_ upstream: Upstream) -> [UInt8] {
        switch upstream {
        case .http(let host, let port, _): return Array((host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)").utf8)
        case .https(let host, let port, _):
            return Array((host.contains(":") ? "https://[\(host)]:\(port)" : "https://\(host):\(port)").utf8)
        case .unix(let path): return Array("unix:\(path)".utf8)
        }
    }
}
