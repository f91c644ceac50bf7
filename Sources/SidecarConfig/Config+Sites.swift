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
