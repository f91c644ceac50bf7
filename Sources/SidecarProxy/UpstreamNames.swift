import Logging
import SidecarConfig
import SidecarEvent

/// The servers of one upstream given by name, looked up again every `resolve_interval` on the
/// worker's loop (asynchronous DNS: nothing waits), so that an upstream follows addresses that
/// move: each address a name resolves to is a server of its own (a Kubernetes headless
/// Service's pods), added and removed as they come and go. A name is asked again at its
/// records' TTL when that comes sooner. A name that stops resolving keeps its last addresses,
/// and the log says so once.
final class UpstreamNames {
    /// A TTL shorter than this (0 included) is read as this: a name is not asked for in a loop.
    static let shortestIntervalMs: Int64 = 1_000

    private let loop: EventLoop
    private let resolver: Resolver
    private weak var group: UpstreamGroup?
    private let intervalMs: Int64
    /// Its upstream's index, and where `/readyz` learns what the names resolve to now.
    private let upstream: Int
    private let readiness: Readiness
    private var timer: Timer?
    /// When the next round is due (loop milliseconds): a short TTL brings it forward.
    private var dueMs: Int64 = 0
    /// Per entry of the group: its lookup in flight (a round does not ask again meanwhile).
    private var lookups: [Int: Resolver.RecordLookup] = [:]
    /// Per entry of the group: the name is not resolving (said once until it does again).
    private var failing: [Bool]

    init?(
        loop: EventLoop, group: UpstreamGroup, resolver address: ResolverAddress?, intervalMs: Int64, upstream: Int,
        readiness: Readiness
    ) {
        let made = address.map { Resolver(base: loop.base, nameserver: $0.description) }
            ?? Resolver(base: loop.base, resolvConfPath: "/etc/resolv.conf")
        guard let made else { return nil }
        self.loop = loop
        resolver = made
        self.group = group
        self.intervalMs = intervalMs
        self.upstream = upstream
        self.readiness = readiness
        failing = [Bool](repeating: false, count: group.entryCount)
        timer = Timer(loop: loop) { [weak self] in self?.round() }
        round()  // at once: start with every address the name has, not the one looked up at start
    }

    func stop() {
        timer?.cancel()
        timer = nil
        for lookup in lookups.values { lookup.cancel() }
        lookups = [:]
    }

    private func round() {
        guard let group else { return stop() }
        schedule(afterMs: intervalMs)
        lookups = lookups.filter { !$0.value.isFinished }
        for index in 0..<group.entryCount where lookups[index] == nil {
            guard let (host, port) = group.name(ofEntry: index) else { continue }
            lookups[index] = resolver.lookupRecords(host, port: port) { [weak self] addresses, ttl in
                self?.resolved(entry: index, host: host, port: port, addresses)
                if let ttl { self?.expires(afterSeconds: ttl) }
            }
        }
    }

    private func schedule(afterMs delay: Int64) {
        dueMs = loop.nowMilliseconds + delay
        timer?.schedule(afterMilliseconds: delay)
    }

    /// An answer may be kept `ttl` seconds: the next round comes then if that is sooner than
    /// `resolve_interval`, and not sooner than `shortestIntervalMs`.
    private func expires(afterSeconds ttl: Int) {
        let delay = max(Self.shortestIntervalMs, Int64(min(ttl, Int(Int32.max))) * 1_000)
        if timer != nil, loop.nowMilliseconds + delay < dueMs { schedule(afterMs: delay) }
    }

    private func resolved(entry index: Int, host: String, port: UInt16, _ addresses: [SocketAddress]) {
        guard let group else { return }
        let logger = Logger(label: "sidecar")
        guard !addresses.isEmpty else {
            if !failing[index] {
                failing[index] = true
                logger.warning("upstream server name no longer resolves: keeping its last addresses", metadata: [
                    "upstream_name": "\(group.name)", "host": "\(host)",
                    "addresses": "\(group.addresses(ofEntry: index).map(\.description).joined(separator: ", "))",
                ])
            }
            return
        }
        failing[index] = false
        // IPv4 and IPv6 of one name alike, in a stable order, each address once.
        var unique: [SocketAddress] = []
        for address in addresses where !unique.contains(address) { unique.append(address) }
        unique.sort { $0.description < $1.description }
        readiness.resolvedNames.record(host, port: port, unique)
        guard unique != group.addresses(ofEntry: index).sorted(by: { $0.description < $1.description }) else { return }
        group.replaceAddresses(ofEntry: index, with: unique)
        readiness.forgetUpstream(upstream)
        logger.info("upstream server name resolves to new addresses", metadata: [
            "upstream_name": "\(group.name)", "host": "\(host)",
            "addresses": "\(unique.map(\.description).joined(separator: ", "))",
        ])
    }
}

extension Upstream {
    /// Its host name and port when it is a name to look up (not an IP literal, not a socket).
    var nameToResolve: (host: String, port: UInt16)? {
        switch self {
        case .http(let host, let port, _), .https(let host, let port, _):
            return HostName.isIPLiteral(host) ? nil : (host, port)
        case .unix:
            return nil
        }
    }
}

extension UpstreamNames {
    /// The addresses of `host` from `resolver` now, waiting at most `timeoutMs`: at start and on
    /// reload, on the control thread (never on a worker's loop). Empty when it does not resolve.
    static func lookupNow(_ host: String, port: UInt16, resolver address: ResolverAddress, timeoutMs: Int64) -> [SocketAddress] {
        guard let loop = try? EventLoop(), let resolver = Resolver(base: loop.base, nameserver: address.description) else {
            return []
        }
        var found: [SocketAddress] = []
        let deadline = Timer(loop: loop) { loop.stop() }
        let lookup = resolver.lookup(host, port: port) { addresses in
            found = addresses
            loop.stop()
        }
        if !lookup.isFinished {
            deadline.schedule(afterMilliseconds: timeoutMs)
            loop.run()
        }
        lookup.cancel()
        deadline.cancel()
        return found
    }
}
