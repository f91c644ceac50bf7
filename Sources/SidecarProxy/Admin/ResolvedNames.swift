import SidecarEvent
import Synchronization

/// The addresses each upstream name resolved to last, as the workers' lookups found them
/// (`UpstreamNames`), so that `/readyz` probes the servers requests go to now rather than those
/// found at start or reload. Written when a lookup answers, read when `/readyz` probes.
final class ResolvedNames: Sendable {
    private let found = Mutex<[String: [SocketAddress]]>([:])

    /// `host:port` resolves to `addresses` now (none: it stopped resolving; the last ones stay).
    func record(_ host: String, port: UInt16, _ addresses: [SocketAddress]) {
        guard !addresses.isEmpty else { return }
        found.withLock { $0[Self.key(host, port)] = addresses }
    }

    /// The addresses last found for `host:port`; nil before any lookup answered.
    func addresses(_ host: String, port: UInt16) -> [SocketAddress]? {
        found.withLock { $0[Self.key(host, port)] }
    }

    /// A reload: the names no longer configured are forgotten, so the map holds only the
    /// names of the upstreams in force.
    func keep(only names: Set<String>) {
        found.withLock { found in found = found.filter { names.contains($0.key) } }
    }

    static func key(_ host: String, _ port: UInt16) -> String { "\(host.lowercased()):\(port)" }
}
