import SidecarHTTP

/// `upstreams` and `rules` (per-path policy and routing), as the engine applies them.
extension Config {
    /// An upstream besides the top-level one, by the name rules use (`upstreams.<name>`).
    public struct NamedUpstream: Sendable, Equatable {
        public var name: String
        public var target: Upstream
        public var timeout: TimeSpan
        public var connectTimeout: TimeSpan
        /// Open connections to it at once (all workers together); 0 = no cap of its own.
        public var maxConnections = 0
        /// `tls`: for an `https://` upstream.
        public var tls = UpstreamTLS()
        /// Every server (`url` as a list), `target` (the first) included.
        public var servers: [UpstreamServer] = []
        public var balancing = Balancing()
        public var healthCheck = HealthCheck()

        public init(name: String, target: Upstream, timeout: TimeSpan, connectTimeout: TimeSpan) {
            self.name = name
            self.target = target
            self.timeout = timeout
            self.connectTimeout = connectTimeout
            servers = [UpstreamServer(target: target)]
        }
    }

    /// One entry of `rules`: what it matches and what it decides. The first rule that
    /// matches a request decides it; with none, the `access.*` lists do.
    public struct Rule: Sendable, Equatable {
        /// Position in the list (0-based), as logs and `check` name it (`rules[3]`).
        public var index: Int
        /// Glob on the normalized path, as `access.public_paths`.
        public var path: String
        /// Upper-case method names; empty: any method.
        public var methods: [String] = []
        /// Lower-case host (no port); nil: any host.
        public var host: String? = nil
        public var isPublic = false
        public var isAPI = false
        public var deny = false
        /// Lower-cased addresses; with the others below, who may pass (on top of `access.*`).
        public var allowedEmails: [String] = []
        public var allowedEmailDomains: [String] = []
        public var allowedSubjects: [String] = []
        /// nil: as `access.allow_private_relay` (which already decided who could sign in).
        public var allowPrivateRelay: Bool? = nil
        /// An `upstreams` name; nil: the top-level upstream.
        public var upstream: String? = nil
        /// What a CORS preflight (an OPTIONS with `Origin` and `Access-Control-Request-Method`,
        /// no credentials) gets; nil: forwarded where the path is an API path (`api: true`, or
        /// `access.api_paths`), refused elsewhere.
        public var corsPreflight: CORSPreflight? = nil
        /// `set_headers`: added to each request the rule decides, in this order.
        public var setHeaders: [StaticHeader] = []
        /// Where the rule starts in the file (nil for a rule set by other means).
        public var line: Int? = nil
        public var column: Int? = nil

        public init(index: Int, path: String) {
            self.index = index
            self.path = path
        }

        /// Restricts who may pass beyond signing in.
        public var restrictsUsers: Bool {
            !allowedEmails.isEmpty || !allowedEmailDomains.isEmpty || !allowedSubjects.isEmpty || allowPrivateRelay == false
        }

        /// What a request must be to match: the glob, the methods and the host. A method the
        /// sidecar does not know (`PROPFIND`, or `post`, which some frameworks take for POST)
        /// is held to a rule that refuses (`deny`, `allowed_*`) by method, never let past it.
        public var condition: PathRuleCondition {
            var set = HTTPMethodSet(methods.compactMap(HTTPMethodSet.method(named:)))
            if !set.isEmpty && (deny || restrictsUsers) { set.insert(.other) }
            return PathRuleCondition(glob: path, methods: set, host: host)
        }

        /// Where the rule routes: 0 the top-level upstream, n `upstreams[n - 1]`.
        public func upstreamIndex(in upstreams: [NamedUpstream]) -> Int {
            upstream.flatMap { name in upstreams.firstIndex { $0.name == name }.map { $0 + 1 } } ?? 0
        }
    }

    /// The name of the top-level upstream where rules, logs and metrics name upstreams.
    public static let defaultUpstreamName = "default"

    /// `rules[].cors_preflight`.
    public enum CORSPreflight: String, Sendable, Equatable, CaseIterable {
        /// Forwarded to the upstream, which owns its CORS policy, without identity.
        case forward
        /// Decided like any other request: without a session, 401 (a browser's preflight
        /// never carries one).
        case refuse
    }
}

/// The keys of an entry of `rules` (and of a site's `rules`), declared once for every entry.
/// The schema sets `index` and the position, and checks the keys against each other.
extension Config.Rule: ConfigSection {
    init() { self.init(index: 0, path: "/") }

    static let path = "rules"
    static let keys: [ConfigKey<Self>] = [
        .requiredValue(\.path, "path", "required: a glob on the normalized path, as public_paths", Names.pathGlob),
        .list(\.methods, "methods", "only these methods; left out: every method", method),
        .optional(\.host, "host", "only this Host (its port ignored); left out: any host") { text, _ in host(text) },
        .bool(\.isPublic, "public", "no session needed, as public_paths"),
        .bool(\.isAPI, "api", "without a session: 401 JSON, as api_paths"),
        .bool(\.deny, "deny", "403 for everyone"),
        .list(\.allowedEmails, "allowed_emails", "who may pass, on top of access.*: others signed in get 403",
              Names.email),
        .list(\.allowedEmailDomains, "allowed_email_domains", "the domains of addresses that may pass",
              Names.emailDomain),
        .list(\.allowedSubjects, "allowed_subjects", "the Apple user ids (sub) that may pass", Parse.nonEmpty),
        .optional(\.allowPrivateRelay, "allow_private_relay",
                  "false: refuse private relay addresses here; left out: as access.allow_private_relay") { text, _ in
            Parse.bool(text)
        },
        .value(\.upstream, "upstream", "an upstreams name; left out (or default): the top-level upstream",
               upstreamName),
        .optional(\.corsPreflight, "cors_preflight",
                  "CORS preflights to the upstream without identity (forward, the default of an API path) or "
                      + "needing a session (refuse)") { text, _ in
            Config.CORSPreflight(rawValue: text).map { .success($0) }
                ?? .failure(ValueError("\(quoted(text)) is not forward or refuse"))
        },
        .staticHeaders(\.setHeaders, "set_headers",
                       "fixed fields added to each request the rule decides; a client's own copies are removed "
                           + "(Docs/configuration.md#rules-per-path)"),
    ]

    private static func method(_ text: String) -> Result<String, ValueError> {
        let upper = text.uppercased()
        guard HTTPMethodSet.method(named: upper) != nil else {
            return .failure(ValueError(
                "unknown method \(quoted(text)) (GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH, TRACE or CONNECT)"))
        }
        return .success(upper)
    }

    /// `admin.example.com`, `10.0.0.7`, `[::1]`: compared with the request's `Host` without its port.
    static func host(_ text: String) -> Result<String, ValueError> {
        var bare = text
        if bare.hasPrefix("["), bare.hasSuffix("]") { bare = String(bare.dropFirst().dropLast()) }
        guard let host = HostName.normalized(bare), !host.hasSuffix(".") else {
            return .failure(ValueError("invalid host \(quoted(text)) (a name or an IP address, without a port)"))
        }
        return .success(host.contains(":") ? "[\(host)]" : host)
    }

    /// One of `upstreams` (or a site's), or `default`: the top-level upstream, as left out.
    private static func upstreamName(_ name: String, _ context: ParseContext) -> Result<String?, ValueError> {
        if name == Config.defaultUpstreamName { return .success(nil) }
        let names = context.upstreamNames
        return names.contains(name) ? .success(name)
            : .failure(ValueError("no upstream named \(quoted(name)) (upstreams: "
                + "\(names.isEmpty ? "none" : names.joined(separator: ", ")))"))
    }
}
