import SidecarConfig
import SidecarEvent

/// An upstream `/readyz` checks: each of its servers, a server given by name at the addresses
/// the workers' lookups found last (`ResolvedNames`), else at the one found at start or reload.
struct ReadinessTarget {
    var name: String
    /// How `/readyz` names it: `upstream` (the top-level one), `upstream <name>`, or
    /// `site <name>: upstream` for a site's.
    var label: String
    /// Each configured server, and the address it was found at when the settings were loaded.
    var entries: [(server: Upstream, address: SocketAddress)]
    var connectTimeoutMs: Int64

    /// The servers to probe now, each with its text as access lines name it
    /// (`app:3000@10.0.0.7` for an address of a name).
    func servers(resolved: ResolvedNames) -> [(address: SocketAddress, text: String)] {
        entries.flatMap { server, address -> [(address: SocketAddress, text: String)] in
            let found = server.nameToResolve.flatMap { resolved.addresses($0.host, port: $0.port) } ?? [address]
            return found.map { ($0, String(decoding: UpstreamGroup.describe(server, at: $0), as: UTF8.self)) }
        }
    }

    /// Whether an unreachable upstream lists its servers: one server at a fixed address is the
    /// upstream itself; several, or one found by name, are each named.
    func namesServers(_ servers: [(address: SocketAddress, text: String)]) -> Bool {
        servers.count > 1 || entries.contains { $0.server.nameToResolve != nil }
    }

    /// Every upstream of `options`, the top-level one first, its servers at `addresses`.
    static func all(_ options: ProxyOptions, addresses: [[SocketAddress]]) -> [ReadinessTarget] {
        zip(options.allUpstreams, addresses).enumerated().map { index, pair in
            let name = options.upstreamName(index)
            return ReadinessTarget(
                name: name,
                label: index == 0 ? "upstream"
                    : options.config.sites.contains { $0.name == name } ? "site \(name): upstream" : "upstream \(name)",
                entries: zip(pair.0.servers, pair.1).map { ($0.target, $1) }, connectTimeoutMs: pair.0.connectTimeoutMs)
        }
    }

    /// The `ResolvedNames` keys of `targets`' names: what a reload keeps.
    static func names(_ targets: [ReadinessTarget]) -> Set<String> {
        Set(targets.flatMap { $0.entries.compactMap { $0.server.nameToResolve.map { ResolvedNames.key($0.host, $0.port) } } })
    }
}
