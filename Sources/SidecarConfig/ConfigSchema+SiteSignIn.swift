/// What a site's own sign-in is checked against: the top-level keys it depends on.
struct SiteSignInContext {
    /// `apple.client_id`'s Services IDs (empty when `apple` is in error: nothing is checked).
    var clientIDs: [String]
    /// `session.domain`: one sign-in on `public_url` for every site under it.
    var sessionDomain: String?
}

/// `sites.<name>.public_url` and `sites.<name>.client_id`: a site that signs in on its own host.
/// Its public_url must be one of its hosts (the callback comes back to the site that started
/// it), its Services ID one of `apple.client_id`'s, and its session cookie host-only: with
/// `session.domain` every site shares the sign-in on the top-level public_url instead.
extension ConfigSchema {
    /// `site` as its entry read: the public_url and client_id that pass these checks.
    func checkSiteSignIn(
        _ section: Section, _ site: Config.Site, context: SiteSignInContext
    ) -> (publicURL: HTTPURL?, clientID: String?) {
        let (url, clientID, hosts) = (site.publicURL, site.clientID, site.hosts)
        var publicURL: HTTPURL?
        if let url {
            let at = section.location(of: "public_url"), path = "\(section.path).public_url"
            if !url.isHTTPS && !url.isLoopback {
                reader.report(.invalidValue, path, at: at,
                              "plain http is only allowed on loopback hosts (localhost, 127.0.0.0/8, [::1]): "
                              + "Apple's cross-site form_post could never carry the state cookie back (use https)")
            } else if !hosts.contains(HostName.bracketed(url.host.lowercased())) {
                reader.report(.invalidValue, path, at: at,
                              "\(url.host) is not one of the site's hosts (\(hosts.joined(separator: ", "))): "
                              + "its sign-in must come back to the site")
            } else if let domain = context.sessionDomain.map(Self.bareDomain),
                      url.host.lowercased() == domain || url.host.lowercased().hasSuffix("." + domain) {
                reader.report(.conflict, path, at: at,
                              "\(url.host) is under session.domain \(domain), whose sites share the sign-in on the "
                              + "top-level public_url and its cookie; a site's own public_url needs a host-only "
                              + "cookie: drop one of them, or sign in there on a host outside \(domain)")
            } else {
                publicURL = url
            }
        }
        guard let clientID else { return (publicURL, nil) }
        let at = section.location(of: "client_id"), path = "\(section.path).client_id"
        if !context.clientIDs.isEmpty, !context.clientIDs.contains(clientID) {
            reader.report(.invalidValue, path, at: at,
                          "\(quoted(clientID)) is not one of apple.client_id (\(context.clientIDs.joined(separator: ", ")))")
            return (publicURL, nil)
        }
        if url == nil {
            reader.report(.missingKey, "\(section.path).public_url", at: at,
                          "a site's client_id is for its own sign-in: give the site a public_url")
            return (publicURL, nil)
        }
        return (publicURL, clientID)
    }

    /// `session.domain` as browsers compare it: lower case, without a leading dot.
    private static func bareDomain(_ domain: String) -> String {
        var bare = domain.lowercased()
        while bare.hasPrefix(".") { bare.removeFirst() }
        return bare
    }
}
