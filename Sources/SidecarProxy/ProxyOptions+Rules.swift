import SidecarConfig
import SidecarHTTP

extension ProxyOptions {
    /// An upstream besides the top-level one, which rules route to by position.
    public struct NamedUpstream: Sendable, Equatable {
        public var name: String
        public var upstream: Upstream
        public var timeoutMs: Int64
        public var connectTimeoutMs: Int64
        /// `upstreams.<name>.max_connections`, all workers together; 0 = no cap of its own.
        public var maxConnections = 0

        public init(name: String, upstream: Upstream, timeoutMs: Int64, connectTimeoutMs: Int64) {
            self.name = name
            self.upstream = upstream
            self.timeoutMs = timeoutMs
            self.connectTimeoutMs = connectTimeoutMs
        }
    }

    /// One entry of `rules`, as the engine applies it.
    public struct Rule: Sendable {
        public var condition: PathRuleCondition
        public var isPublic = false
        public var isAPI = false
        public var deny = false
        /// Lower-cased; empty lists and `allowPrivateRelay` true: any signed-in user.
        public var allowedEmails: [String] = []
        public var allowedEmailDomains: [String] = []
        public var allowedSubjects: [String] = []
        public var allowPrivateRelay = true
        /// 0: the top-level upstream; n: `namedUpstreams[n - 1]`.
        public var upstream = 0

        public init(condition: PathRuleCondition) {
            self.condition = condition
        }

        /// The methods of a rule's `methods` list. A method the sidecar does not know
        /// (`PROPFIND`, or `post`, which some frameworks take for POST) is held to a rule that
        /// refuses (`deny`, `allowed_*`) by method, never let past it.
        static func methods(_ names: [String], refusing: Bool) -> HTTPMethodSet {
            var methods = HTTPMethodSet(names.compactMap(HTTPMethodSet.method(named:)))
            if !methods.isEmpty && refusing { methods.insert(.other) }
            return methods
        }

        var restrictsUsers: Bool {
            !allowedEmails.isEmpty || !allowedEmailDomains.isEmpty || !allowedSubjects.isEmpty || !allowPrivateRelay
        }
    }

    /// The name of upstream `index` as logs, metrics and `/readyz` give it.
    public func upstreamName(_ index: Int) -> String {
        index == 0 ? Config.defaultUpstreamName : namedUpstreams[index - 1].name
    }

    /// Every upstream, the top-level one first: (target, timeout, connect timeout, cap).
    var allUpstreams: [(upstream: Upstream, timeoutMs: Int64, connectTimeoutMs: Int64, maxConnections: Int)] {
        [(upstream, upstreamTimeoutMs, upstreamConnectTimeoutMs, upstreamMaxConnections)]
            + namedUpstreams.map { ($0.upstream, $0.timeoutMs, $0.connectTimeoutMs, $0.maxConnections) }
    }

    /// Maps `upstreams` and `rules` of the configuration.
    mutating func applyRules(_ config: Config) {
        namedUpstreams = config.upstreams.map { named in
            var upstream = NamedUpstream(
                name: named.name, upstream: Upstream(named.target), timeoutMs: named.timeout.milliseconds,
                connectTimeoutMs: named.connectTimeout.milliseconds)
            upstream.maxConnections = named.maxConnections
            return upstream
        }
        let names = namedUpstreams.map(\.name)
        rules = config.rules.map { rule in
            let methods = Rule.methods(rule.methods, refusing: rule.deny || rule.restrictsUsers)
            var mapped = Rule(condition: PathRuleCondition(glob: rule.path, methods: methods, host: rule.host))
            mapped.isPublic = rule.isPublic
            mapped.isAPI = rule.isAPI
            mapped.deny = rule.deny
            mapped.allowedEmails = rule.allowedEmails
            mapped.allowedEmailDomains = rule.allowedEmailDomains
            mapped.allowedSubjects = rule.allowedSubjects
            mapped.allowPrivateRelay = rule.allowPrivateRelay ?? true
            mapped.upstream = rule.upstream.flatMap { names.firstIndex(of: $0).map { $0 + 1 } } ?? 0
            return mapped
        }
    }
}

extension ProxyOptions.Upstream {
    init(_ upstream: SidecarConfig.Upstream) {
        switch upstream {
        case .http(let host, let port, let basePath): self = .tcp(host: host, port: port, basePath: basePath)
        case .unix(let path): self = .unix(path: path)
        }
    }
}
