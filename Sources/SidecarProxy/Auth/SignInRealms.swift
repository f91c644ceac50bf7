import SidecarConfig
import SidecarCrypto
import SidecarHTTP

/// One place a sign-in completes: the top-level `public_url`, or a site with a `public_url` of
/// its own. Its sessions are sealed bound to it (`sessionContext`, the AEAD's associated data),
/// so a cookie copied from one site's host to another's opens on neither but its own.
struct SignInRealm: Sendable {
    /// The site's name; nil for the top-level sign-in.
    let site: String?
    let origin: String
    /// `{origin}{prefix}/callback`: the redirect_uri Apple sends the browser back to.
    let redirectURI: String
    /// The Services ID its logins ask for and its codes are exchanged with.
    let clientID: String
    /// Accepts only id_tokens issued to `clientID`.
    let verifier: AppleIDTokenVerifier
    /// What its session values are sealed to: the cookie name, and the site's name after a
    /// space for a site (a character no cookie name has, so no other context reads alike).
    let sessionContext: String
    /// Appended to a login cookie's name to make the context its state is sealed to: a
    /// callback on one site cannot open a state started on another.
    let loginContextSuffix: String
    /// The session cookie's `Domain`: `session.domain` for the top-level sign-in; a site's
    /// cookie is host-only.
    let cookieDomain: String?
}

/// The realms of a configuration and which one a request's host belongs to: the site of the
/// host as `sites` reads it (`SiteTable`), the top-level one for a site without a public_url
/// of its own and without `sites`.
struct SignInRealms: Sendable {
    /// The top-level sign-in first.
    let all: [SignInRealm]
    private let hosts: [[UInt8]]
    private let realmOfHost: [Int]
    private let defaultRealm: Int
    /// Whether every request signs in through the top-level public_url (no lookup needed).
    let isSingle: Bool

    init(config: Config, issuer: String, leeway: Int64) {
        let prefix = config.routes.prefix, cookieName = config.session.cookieName
        let first = config.apple.clientID
        var all = [SignInRealm(
            site: nil, origin: config.publicURL.origin, redirectURI: config.redirectURI, clientID: first,
            verifier: AppleIDTokenVerifier(issuer: issuer, audiences: [first], leeway: leeway),
            sessionContext: cookieName, loginContextSuffix: "", cookieDomain: config.session.domain)]
        var hosts: [[UInt8]] = [], realmOfHost: [Int] = []
        var realmOfSite: [String: Int] = [:]
        for site in config.sites {
            var realm = 0
            if let publicURL = site.publicURL, let redirectURI = site.redirectURI(prefix: prefix) {
                let clientID = site.clientID ?? first
                realm = all.count
                all.append(SignInRealm(
                    site: site.name, origin: publicURL.origin, redirectURI: redirectURI, clientID: clientID,
                    verifier: AppleIDTokenVerifier(issuer: issuer, audiences: [clientID], leeway: leeway),
                    sessionContext: cookieName + " " + site.name, loginContextSuffix: " " + site.name,
                    cookieDomain: nil))
            }
            realmOfSite[site.name] = realm
            for host in site.hosts {
                hosts.append(Array(host.utf8))
                realmOfHost.append(realm)
            }
        }
        self.all = all
        self.hosts = all.count > 1 ? hosts : []
        self.realmOfHost = all.count > 1 ? realmOfHost : []
        defaultRealm = config.defaultSite.flatMap { realmOfSite[$0] } ?? 0
        isSingle = all.count == 1
    }

    /// The realm of `host` (read as `rules[].host` is); a host no site lists belongs to the
    /// default site's (a request for it never gets this far without one: 421).
    func realm(forHost host: UnsafeRawBufferPointer?) -> Int {
        guard !isSingle else { return 0 }
        if let host {
            for k in hosts.indices where PathRuleTable.hostEquals(host, hosts[k]) { return realmOfHost[k] }
        }
        return defaultRealm
    }

    /// The realm of the request's host (an absolute-form target's authority first).
    func realm(of head: HTTPRequestHead) -> Int {
        guard !isSingle else { return 0 }
        return head.withView { view in realm(forHost: (head.authority ?? head.host).map { view[$0] }) }
    }
}
