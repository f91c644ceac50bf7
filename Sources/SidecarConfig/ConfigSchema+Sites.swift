import SidecarHTTP

/// `sites` and `default_site`. A host two sites name, a site without an upstream, or a
/// `public_url` no site answers would send requests where the operator did not mean them:
/// errors, at the entry.
extension ConfigSchema {
    /// The sites, and their upstreams (named as the sites, added to `upstreams`); `default_site`.
    /// `context` names the identity headers no rule may set.
    mutating func readSites(
        _ root: Section, upstreamNames: [String], topLevel: Config.TopLevel, signIn: SiteSignInContext,
        context: ParseContext
    ) -> (sites: [Config.Site], upstreams: [Config.NamedUpstream], defaultSite: String?) {
        let template = root.entryTemplate("sites").entryTemplate("<name>")
        _ = template.read(Config.SiteEntry.self, context: context)
        let sections = root.sections(inNamedMap: "sites")
        var ruleContext = context
        ruleContext.upstreamNames = upstreamNames + sections.map(\.name)
        _ = readRule(template.entryTemplate("rules"), index: 0, context: ruleContext)
        _ = template.section("pages").read(Config.Pages.self, context: context)
        var sites: [Config.Site] = []
        var upstreams: [Config.NamedUpstream] = []
        var owner: [String: String] = [:]
        for (name, at, section) in sections {
            let entry = section.read(Config.SiteEntry.self, context: context)
            let hosts = entry.site.hosts
            if section.contains("hosts"), hosts.isEmpty, !reader.hasErrors(at: "\(section.path).hosts") {
                reader.report(.invalidValue, "\(section.path).hosts", at: section.location(of: "hosts"), "a site needs a host")
            }
            guard Self.isUpstreamName(name), !upstreamNames.contains(name) else {
                reader.report(.invalidValue, section.path, at: at, upstreamNames.contains(name)
                    ? "\(quoted(name)) is already an upstream's name; a site's upstream takes the site's name"
                    : "invalid site name \(quoted(name)) (1–32 of a-z, 0-9, _ and -, starting with a letter or digit)")
                continue
            }
            for host in hosts {
                if let other = owner[host] {
                    reader.report(.conflict, "\(section.path).hosts", at: section.location(of: "hosts"),
                                  "\(host) is already sites.\(other)'s: a host belongs to one site")
                } else {
                    owner[host] = name
                }
            }
            guard let target = entry.upstream, !hosts.isEmpty else { continue }
            var upstream = Config.NamedUpstream(name: name, target: target, timeout: topLevel.upstreamTimeout,
                                                connectTimeout: topLevel.upstreamConnectTimeout)
            upstream.maxConnections = topLevel.upstreamMaxConnections
            upstreams.append(upstream)
            var site = entry.site
            site.name = name
            (site.publicURL, site.clientID) = checkSiteSignIn(section, entry.site, context: signIn)
            site.rules = readSiteRules(section, context: ruleContext)
            if section.contains("pages") { site.pages = section.section("pages").read(Config.Pages.self, context: context) }
            sites.append(site)
        }
        var siteContext = context
        siteContext.siteNames = sites.map(\.name)
        let defaultSite = root.read(Config.DefaultSite.self, context: siteContext).name
        // Only once every site read: a site in error has already been reported.
        if let publicURL = context.publicURL, !sites.isEmpty, sites.count == sections.count, defaultSite == nil,
           owner[publicURL.host.lowercased()] == nil {
            reader.report(.missingKey, "sites", at: root.location(of: "sites"),
                          "no site answers public_url's host \(publicURL.host), where sign-in happens: list it, or name a default_site")
        }
        if Set(upstreamNames).count + upstreams.count > Self.maxUpstreams {
            reader.report(.invalidValue, "sites", at: root.location(of: "sites"),
                          "\(upstreamNames.count + upstreams.count) upstreams with the sites'; at most \(Self.maxUpstreams)")
        }
        return (sites, upstreams, defaultSite)
    }

    /// A site's own `rules`, read as the top-level ones are (their errors at `sites.<name>.rules[i]`);
    /// nil when it has none.
    private func readSiteRules(_ section: Section, context: ParseContext) -> [Config.Rule]? {
        guard section.contains("rules") else { return nil }
        let entries = section.sections(inList: "rules")
        if entries.count > Self.maxRules {
            reader.report(.invalidValue, "\(section.path).rules", at: section.location(of: "rules"),
                          "\(entries.count) rules; at most \(Self.maxRules)")
        }
        return entries.enumerated().compactMap { index, entry in readRule(entry, index: index, context: context) }
    }
}
