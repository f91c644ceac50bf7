/// `sites`: several public hosts on one sidecar, each with its own upstream.
extension Config {
    /// One entry of `sites`: the hosts it answers and where their requests go.
    public struct Site: Sendable, Equatable {
        /// The name logs use, and the name of its upstream among `upstreams`.
        public var name: String
        /// Lower case, without port or trailing dot.
        public var hosts: [String]
        /// `sites.<name>.public_url`: the site signs in on its own host (its callback, a
        /// host-only session cookie valid on its hosts only); nil: through the top-level one.
        public var publicURL: HTTPURL?
        /// `sites.<name>.client_id`: the Services ID of its sign-in, one of `apple.client_id`;
        /// nil: the first of them.
        public var clientID: String?
        /// `sites.<name>.rules`: decide this site's requests in place of the top-level `rules`;
        /// nil: the top-level ones.
        public var rules: [Rule]?
        /// `sites.<name>.pages`: the pages its visitors see (templates, language, sign-in
        /// page); nil: the top-level `pages`.
        public var pages: Pages?

        public init(name: String, hosts: [String], publicURL: HTTPURL? = nil, clientID: String? = nil) {
            self.name = name
            self.hosts = hosts
            self.publicURL = publicURL
            self.clientID = clientID
        }

        /// Its redirect_uri with `prefix` (`routes.prefix`), when it signs in on its own host.
        public func redirectURI(prefix: String) -> String? { publicURL.map { $0.origin + prefix + "/callback" } }
    }
}

extension Config {
    /// The keys of an entry of `sites` (`sites.<name>`), declared once for every name: the
    /// site's own fields and its upstream. Its `rules` are `Rule` entries and its `pages` a
    /// `Pages` section; the schema checks the keys against each other and the other sites.
    struct SiteEntry: Sendable, ConfigSection {
        var site = Site(name: "", hosts: [])
        var upstream: Upstream?

        init() {}

        static let path = "sites.<name>"
        static let keys: [ConfigKey<Self>] = [
            .required(\.site.hosts, "hosts", "required: the hosts it answers, without a port",
                      missing: "a site is the hosts it answers") { text, _ in Rule.host(text) },
            .required(\.upstream, "upstream", "required: as upstream") { text, context in
                Upstream.parse(text, baseDirectory: context.baseDirectory)
            },
            .optional(\.site.publicURL, "public_url",
                      "its own sign-in: its callback, a host-only cookie valid on its hosts only (never under "
                          + "session.domain)") { text, _ in HTTPURL.parse(text, allowPath: false, allowQuery: false) },
            .optional(\.site.clientID, "client_id", "its Services ID, one of apple.client_id (needs public_url)") {
                text, _ in Names.bundleID(text, what: "client id (Services ID)")
            },
        ]
    }
}

extension Config {
    /// `default_site`, read once the sites are: one of those that loaded.
    struct DefaultSite: Sendable, ConfigSection {
        var name: String?

        init() {}

        static let path = ""
        static let keys: [ConfigKey<Self>] = [
            .optional(\.name, "default_site", "the site of any other host (left out: such requests get 421)") {
                name, context in
                let names = context.siteNames
                return names.contains(name) ? .success(name)
                    : .failure(ValueError("no site named \(quoted(name)) (sites: "
                        + "\(names.isEmpty ? "none" : names.joined(separator: ", ")))"))
            },
        ]
    }
}
