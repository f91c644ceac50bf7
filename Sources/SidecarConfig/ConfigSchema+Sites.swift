import SidecarHTTP

/// `sites` and `default_site`. A host two sites name, a site without an upstream, or a
/// `public_url` no site answers would send requests where the operator did not mean them:
/// errors, at the entry.
extension ConfigSchema {
    /// The sites, and their upstreams (named as the sites, added to `upstreams`); `default_site`.
    mutating func readSites(
        _ root: Section, publicURL: HTTPURL?, upstreamNames: [String], timeout: TimeSpan, connectTimeout: TimeSpan,
        maxConnections: Int, signIn: SiteSignInContext, identityNames: [String]
    ) -> (sites: [Config.Site], upstreams: [Config.NamedUpstream], defaultSite: String?) {
        let template = root.entryTemplate("sites").entryTemplate("<name>")
        _ = template.list("hosts", default: [], Self.siteHost)
        _ = template.optional("upstream") { Upstream.parse($0, baseDirectory: baseDirectory) }
        template.declare("public_url", "client_id")
        let sections = root.sections(inNamedMap: "sites")
        let ruleUpstreams = upstreamNames + sections.map(\.name)
        _ = readRule(template.entryTemplate("rules"), index: 0, upstreams: ruleUpstreams, identityNames: identityNames,
                     setsHeaders: false)
        let pagesContext = ParseContext(baseDirectory: baseDirectory, environment: environment)
        _ = template.section("pages").read(Config.Pages.self, context: pagesContext)
        var sites: [Config.Site] = []
        var upstreams: [Config.NamedUpstream] = []
        var owner: [String: String] = [:]
        for (name, at, section) in sections {
            if !section.contains("hosts") { section.requireMissing("hosts", because: "a site is the hosts it answers") }
            let errorsBefore = reader.errors.count
            let hosts = section.list("hosts", default: [], Self.siteHost)
            if section.contains("hosts") && hosts.isEmpty && reader.errors.count == errorsBefore {
                reader.report(.invalidValue, "\(section.path).hosts", at: section.location(of: "hosts"), "a site needs a host")
            }
            let target = section.required("upstream") { Upstream.parse($0, baseDirectory: baseDirectory) }
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
            guard let target, !hosts.isEmpty else { continue }
            var upstream = Config.NamedUpstream(name: name, target: target, timeout: timeout, connectTimeout: connectTimeout)
            upstream.maxConnections = maxConnections
            upstreams.append(upstream)
            let own = readSiteSignIn(section, hosts: hosts, context: signIn)
            var site = Config.Site(name: name, hosts: hosts, publicURL: own.publicURL, clientID: own.clientID)
            site.rules = readSiteRules(section, upstreams: ruleUpstreams, identityNames: identityNames)
            if section.contains("pages") { site.pages = section.section("pages").read(Config.Pages.self, context: pagesContext) }
            sites.append(site)
        }
        let defaultSite = root.optional("default_site") { name -> Result<String, ValueError> in
            sites.contains { $0.name == name } ? .success(name)
                : .failure(ValueError("no site named \(quoted(name)) (sites: \(sites.isEmpty ? "none" : sites.map(\.name).joined(separator: ", ")))"))
        }
        // Only once every site read: a site in error has already been reported.
        if let publicURL, !sites.isEmpty, sites.count == sections.count, defaultSite == nil,
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
    private func readSiteRules(_ section: Section, upstreams: [String], identityNames: [String]) -> [Config.Rule]? {
        guard section.contains("rules") else { return nil }
        let entries = section.sections(inList: "rules")
        if entries.count > Self.maxRules {
            reader.report(.invalidValue, "\(section.path).rules", at: section.location(of: "rules"),
                          "\(entries.count) rules; at most \(Self.maxRules)")
        }
        // The fields rules set are rendered, and every client copy of them stripped, from the
        // top-level rules alone: a site's own rules cannot add fields (a site without rules of
        // its own is decided by the top-level rules, which can).
        for entry in entries where entry.contains("set_headers") {
            entry.declare("set_headers")
            reader.report(.invalidValue, "\(entry.path).set_headers", at: entry.location(of: "set_headers"),
                          "not in a site's own rules: only top-level rules add fields (they decide a site that has no rules)")
        }
        return entries.enumerated().compactMap { index, entry in
            readRule(entry, index: index, upstreams: upstreams, identityNames: identityNames, setsHeaders: false)
        }
    }

    /// `app.example.com`, `10.0.0.7`, `[::1]`: compared with the request's host without its port.
    private static func siteHost(_ text: String) -> Result<String, ValueError> {
        var bare = text
        if bare.hasPrefix("["), bare.hasSuffix("]") { bare = String(bare.dropFirst().dropLast()) }
        guard let host = HostName.normalized(bare), !host.hasSuffix(".") else {
            return .failure(ValueError("invalid host \(quoted(text)) (a name or an IP address, without a port)"))
        }
        return .success(host.contains(":") ? "[\(host)]" : host)
    }
}
