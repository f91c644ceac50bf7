import Logging
import SidecarConfig
import SidecarEvent

/// One upstream of a worker: its servers, a pool each, and which one the next exchange goes
/// to. The exchange asks for a server and never knows which answered except to log it.
final class UpstreamGroup {
    /// Every server, the pools of each entry in order.
    private(set) var servers: [UpstreamPool]
    /// The configured servers, each with the pool of every address it has (one, unless its
    /// name resolves to several: `UpstreamNames`).
    private var entries: [(server: Config.UpstreamServer, pools: [UpstreamPool])]
    /// A pool for a new address of an entry's name.
    private let makePool: (Config.UpstreamServer, SocketAddress) -> UpstreamPool
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

    /// `servers`: the pool of each of `configured`, in order.
    init(name: String, configured: [Config.UpstreamServer], servers: [UpstreamPool], balancing: Config.Balancing,
         connectTimeoutMs: Int64, makePool: @escaping (Config.UpstreamServer, SocketAddress) -> UpstreamPool) {
        self.name = name
        self.servers = servers
        entries = zip(configured, servers).map { ($0, [$1]) }
        self.makePool = makePool
        self.balancing = balancing
        self.connectTimeoutMs = connectTimeoutMs
        credit = [Int](repeating: 0, count: servers.count)
        text = Array(servers.map(\.text).joined(separator: Array(",".utf8)))
    }

    /// Its servers' names, looked up again every `resolve_interval`; nil when all are addresses.
    private var names: UpstreamNames?

    var entryCount: Int { entries.count }

    /// The host name and port of entry `index` when it is a name to look up (not an IP literal).
    func name(ofEntry index: Int) -> (host: String, port: UInt16)? { entries[index].server.target.nameToResolve }

    func addresses(ofEntry index: Int) -> [SocketAddress] { entries[index].pools.map(\.address) }

    /// The name of entry `index` now resolves to `addresses`: a pool each (those still there
    /// kept, the others retired: their busy connections finish first).
    func replaceAddresses(ofEntry index: Int, with addresses: [SocketAddress]) {
        let old = entries[index].pools
        let pools = addresses.map { address in old.first { $0.address == address } ?? makePool(entries[index].server, address) }
        for pool in old where !pools.contains(where: { $0 === pool }) { pool.retire() }
        entries[index].pools = pools
        servers = entries.flatMap(\.pools)
        credit = [Int](repeating: 0, count: servers.count)
        for pool in servers { pool.balancing = servers.count > 1 ? balancing : nil }
    }

    /// `health_check`: its servers asked on this loop every interval; nil without one.
    private var healthCheck: UpstreamHealthCheck?

    /// Closes the idle connections of every server and refuses returning ones (shutdown).
    func retire() {
        healthCheck?.stop()
        names?.stop()
        for server in servers { server.retire() }
    }

    deinit {
        healthCheck?.stop()
        names?.stop()
    }

    /// The server for the next exchange: a healthy one (not `avoiding`, the one that just failed
    /// it) that `admits` it now if there is one, else a healthy one it will wait for, else the
    /// one whose time out ends first. One server: that one, with no further look.
    @inline(__always)
    func choose(avoiding: UpstreamPool? = nil, nowMs: @autoclosure () -> Int64, admits: (UpstreamPool) -> Bool) -> UpstreamPool {
        if servers.count == 1 { return servers[0] }
        return chooseAmongSeveral(avoiding: avoiding, nowMs: nowMs(), admits: admits)
    }

    /// Allocates nothing (it runs for every exchange): one pass to pick among the healthy
    /// servers, a second only when the one picked has no room.
    private func chooseAmongSeveral(avoiding: UpstreamPool?, nowMs: Int64, admits: (UpstreamPool) -> Bool) -> UpstreamPool {
        let window = max(connectTimeoutMs, 1_000) * 2
        func usable(_ pool: UpstreamPool) -> Bool {
            pool !== avoiding && pool.health.isAvailable(nowMs: nowMs, tryWindowMs: window)
        }
        var index = balancing.balance == .leastConnections ? fewestBusy(usable) : roundRobin(usable)
        if index < 0 { index = soonestBack(avoiding: avoiding) }  // all out: rather than no one
        if !admits(servers[index]) {
            // At its cap: another healthy server with room takes the exchange (its turn uncharged).
            for other in servers.indices where other != index && usable(servers[other]) && admits(servers[other]) {
                index = other
                break
            }
        }
        servers[index].health.chosen(nowMs: nowMs)
        return servers[index]
    }

    /// The usable server with most credit after each is given its weight; -1: none usable.
    private func roundRobin(_ usable: (UpstreamPool) -> Bool) -> Int {
        var total = 0
        var best = -1
        for index in servers.indices where usable(servers[index]) {
            credit[index] += servers[index].weight
            total += servers[index].weight
            if best < 0 || credit[index] > credit[best] { best = index }
        }
        if best >= 0 { credit[best] -= total }
        return best
    }

    /// The usable server with fewest busy connections for its weight (busy/weight compared
    /// without dividing), ties going round; -1: none usable.
    private func fewestBusy(_ usable: (UpstreamPool) -> Bool) -> Int {
        next = (next + 1) % servers.count
        var best = -1
        for offset in servers.indices {
            let index = (offset + next) % servers.count
            guard usable(servers[index]) else { continue }
            if best < 0
                || servers[index].busyCount * servers[best].weight < servers[best].busyCount * servers[index].weight
            {
                best = index
            }
        }
        return best
    }

    /// Of the servers other than `avoiding`, the one whose time out ends first.
    private func soonestBack(avoiding: UpstreamPool?) -> Int {
        var best = -1
        for index in servers.indices where servers[index] !== avoiding {
            if best < 0 || Self.outUntil(servers[index]) < Self.outUntil(servers[best]) { best = index }
        }
        return max(best, 0)
    }

    private static func outUntil(_ pool: UpstreamPool) -> Int64 {
        if case .out(let until) = pool.health.state { return until }
        return .min
    }
}

extension UpstreamGroup {
    /// What the workers' groups share with each other and the admin loop.
    struct Shared {
        /// The metrics' `server` label of each pool.
        let labels: ServerLabels
        /// Which upstreams were reached, and what their names resolve to now.
        let readiness: Readiness
    }

    /// The groups for `options`, each server's pool kept from `old` where its address, TLS
    /// context and size stay the same (its idle connections go on serving); the others' pools
    /// are retired (idle connections close, busy ones finish first).
    static func rebuild(
        _ old: [UpstreamGroup], options: ProxyOptions, addresses: [[SocketAddress]], loop: EventLoop, reaper: Reaper,
        budget: UpstreamBudget, shared: Shared
    ) -> [UpstreamGroup] {
        var kept = Set<ObjectIdentifier>()
        var groups: [UpstreamGroup] = []
        for (index, (plan, serverAddresses)) in zip(options.allUpstreams, addresses).enumerated() {
            let tls = index < options.upstreamTLS.count ? options.upstreamTLS[index] : nil
            let previous = index < old.count ? old[index].servers : []
            var pools: [UpstreamPool] = []
            let name = options.upstreamName(index)
            let limit = UpstreamPools.share(of: plan.maxConnections, workers: options.config.workers)
            let make = { (server: Config.UpstreamServer, address: SocketAddress) -> UpstreamPool in
                let pool = UpstreamPool(
                    loop: loop, address: address, capacity: options.upstreamPoolSize, reaper: reaper, budget: budget,
                    tls: tls, host: server.target.host ?? "")
                configure(pool, server, address, plan, name: name, limit: limit, labels: shared.labels,
                          idleTimeoutMs: options.config.upstreamIdleTimeout.milliseconds)
                return pool
            }
            for (server, address) in zip(plan.servers, serverAddresses) {
                let reusable = previous.first { pool in
                    pool.address == address && pool.capacity == options.upstreamPoolSize && pool.tls === tls
                        && !kept.contains(ObjectIdentifier(pool))
                }
                let pool = reusable ?? make(server, address)
                kept.insert(ObjectIdentifier(pool))
                configure(pool, server, address, plan, name: name, limit: limit, labels: shared.labels,
                          idleTimeoutMs: options.config.upstreamIdleTimeout.milliseconds)
                pools.append(pool)
            }
            let group = UpstreamGroup(
                name: name, configured: plan.servers, servers: pools, balancing: plan.balancing,
                connectTimeoutMs: plan.connectTimeoutMs, makePool: make)
            if plan.servers.contains(where: { $0.target.host.map { !HostName.isIPLiteral($0) } ?? false }) {
                group.names = UpstreamNames(
                    loop: loop, group: group, resolver: options.config.resolver,
                    intervalMs: plan.balancing.resolveInterval.milliseconds, upstream: index, readiness: shared.readiness)
            }
            if plan.healthCheck.path != nil {
                group.healthCheck = UpstreamHealthCheck(loop: loop, group: group, settings: plan.healthCheck)
            }
            groups.append(group)
        }
        for pool in old.flatMap(\.servers) where !kept.contains(ObjectIdentifier(pool)) { pool.retire() }
        return groups
    }

    private static func configure(
        _ pool: UpstreamPool, _ server: Config.UpstreamServer, _ address: SocketAddress, _ plan: UpstreamPlan, name: String,
        limit: Int, labels: ServerLabels, idleTimeoutMs: Int64
    ) {
        pool.limit = limit
        pool.idleTimeoutMs = idleTimeoutMs
        pool.text = describe(server.target, at: address)
        pool.metricsSlot = labels.slot(upstream: name, server: String(decoding: pool.text, as: UTF8.self))
        pool.name = name
        pool.timeoutMs = plan.timeoutMs
        pool.connectTimeoutMs = plan.connectTimeoutMs
        pool.weight = server.weight
        pool.balancing = plan.servers.count > 1 ? plan.balancing : nil
        pool.hostField = hostField(server.target)
    }

    /// A server given by name is named with the address it was found at (`app:3000@10.0.0.7`).
    static func describe(_ upstream: Upstream, at address: SocketAddress) -> [UInt8] {
        guard let host = upstream.host, !HostName.isIPLiteral(host) else { return describe(upstream) }
        return describe(upstream) + Array("@\(address.ipText)".utf8)
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
