import Logging
import SidecarConfig
import SidecarEvent

/// The servers of one upstream given by name, looked up again every `resolve_interval` on the
/// worker's loop (asynchronous DNS: nothing waits), so that an upstream follows addresses that
/// move: each address a name resolves to is a server of its own (a Kubernetes headless
/// Service's pods), added and removed as they come and go. A name that stops resolving keeps
/// its last addresses, and the log says so once.
final class UpstreamNames {
    private let resolver: Resolver
    private weak var group: UpstreamGroup?
    private let intervalMs: Int64
    private var timer: Timer?
    private var lookups: [Resolver.Lookup] = []
    /// Per entry of the group: the name is not resolving (said once until it does again).
    private var failing: [Bool]

    init?(loop: EventLoop, group: UpstreamGroup, resolver address: ResolverAddress?, intervalMs: Int64) {
        let made = address.map { Resolver(base: loop.base, nameserver: $0.description) }
            ?? Resolver(base: loop.base, resolvConfPath: "/etc/resolv.conf")
        guard let made else { return nil }
        resolver = made
        self.group = group
        self.intervalMs = intervalMs
        failing = [Bool](repeating: false, count: group.entryCount)
        timer = Timer(loop: loop) { [weak self] in self?.round() }
        round()  // at once: start with every address the name has, not the one looked up at start
    }

    func stop() {
        timer?.cancel()
        timer = nil
        for lookup in lookups { lookup.cancel() }
        lookups = []
    }

    private func round() {
        guard let group else { return stop() }
        lookups.removeAll { $0.isFinished }
        for index in 0..<group.entryCount {
            guard let (host, port) = group.name(ofEntry: index) else { continue }
            lookups.append(resolver.lookup(host, port: port) { [weak self] addresses in
                self?.resolved(entry: index, host: host, addresses)
            })
        }
        timer?.schedule(afterMilliseconds: intervalMs)
    }

    private func resolved(entry index: Int, host: String, _ addresses: [SocketAddress]) {
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
        guard unique != group.addresses(ofEntry: index).sorted(by: { $0.description < $1.description }) else { return }
        group.replaceAddresses(ofEntry: index, with: unique)
        logger.info("upstream server name resolves to new addresses", metadata: [
            "upstream_name": "\(group.name)", "host": "\(host)",
            "addresses": "\(unique.map(\.description).joined(separator: ", "))",
        ])
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
