import SidecarConfig
import SidecarHTTP

/// `sites`: the upstream of the site a request's host names (the `Host` value, or an
/// absolute-form target's authority, read as `rules[].host` is: case, port and trailing dots
/// ignored), the default site's for any other host, or none: 421.
final class SiteTable {
    private let hosts: [[UInt8]]
    /// The upstream (as `Worker.upstreams` numbers them) of each entry of `hosts`.
    private let upstreams: [Int]
    private let defaultUpstream: Int?

    init(_ config: Config) {
        func upstream(of site: String) -> Int {
            config.upstreams.firstIndex { $0.name == site }.map { $0 + 1 } ?? 0
        }
        var hosts: [[UInt8]] = []
        var upstreams: [Int] = []
        for site in config.sites {
            for host in site.hosts {
                hosts.append(Array(host.utf8))
                upstreams.append(upstream(of: site.name))
            }
        }
        self.hosts = hosts
        self.upstreams = upstreams
        defaultUpstream = config.defaultSite.map(upstream(of:))
    }

    /// The upstream of `host`'s site, nil when no site answers it.
    func upstream(forHost host: UnsafeRawBufferPointer?) -> Int? {
        if let host {
            for k in hosts.indices where PathRuleTable.hostEquals(host, hosts[k]) { return upstreams[k] }
        }
        return defaultUpstream
    }
}
