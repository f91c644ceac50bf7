import SidecarConfig
import SidecarHTTP

/// `sites`: the site a request's host names (the `Host` value, or an absolute-form target's
/// authority, read as `rules[].host` is: case, port and trailing dots ignored), the default
/// site for any other host, or none: 421. Sites are numbered as `Config.sites` lists them.
final class SiteTable: Sendable {
    private let hosts: [[UInt8]]
    /// The site of each entry of `hosts`.
    private let siteOfHost: [Int]
    /// The upstream (as `Worker.upstreams` numbers them) of each site.
    private let upstreams: [Int]
    /// Each site's name, for the access line.
    let names: [[UInt8]]
    private let defaultSite: Int?

    init(_ config: Config) {
        var hosts: [[UInt8]] = []
        var siteOfHost: [Int] = []
        for (index, site) in config.sites.enumerated() {
            for host in site.hosts {
                hosts.append(Array(host.utf8))
                siteOfHost.append(index)
            }
        }
        self.hosts = hosts
        self.siteOfHost = siteOfHost
        upstreams = config.sites.map { site in config.upstreams.firstIndex { $0.name == site.name }.map { $0 + 1 } ?? 0 }
        names = config.sites.map { Array($0.name.utf8) }
        defaultSite = config.defaultSite.flatMap { name in config.sites.firstIndex { $0.name == name } }
    }

    /// `host`'s site, nil when no site answers it.
    func site(forHost host: UnsafeRawBufferPointer?) -> Int? {
        if let host {
            for k in hosts.indices where PathRuleTable.hostEquals(host, hosts[k]) { return siteOfHost[k] }
        }
        return defaultSite
    }

    /// The upstream (as `Worker.upstreams` numbers them) of a site.
    func upstream(ofSite site: Int) -> Int { upstreams[site] }
}
