/// Several servers behind one upstream: `upstream` (or an entry's `url`) given as a list, each
/// URL optionally followed by ` weight=N`, balanced by `upstream_balance` (`balance`), with a
/// server that refuses, resets or leaves unanswered `upstream_max_fails` connections in a row taken out for
/// `upstream_fail_timeout` (`max_fails`, `fail_timeout`).
extension Config {
    public struct UpstreamServer: Sendable, Equatable, CustomStringConvertible {
        public var target: Upstream
        /// Its share of the requests against the others' (1-100).
        public var weight = 1

        public init(target: Upstream, weight: Int = 1) {
            self.target = target
            self.weight = weight
        }

        public var description: String { weight == 1 ? target.description : "\(target) weight=\(weight)" }

        static func parse(_ text: String, baseDirectory: String) -> Result<UpstreamServer, ValueError> {
            let words = text.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = words.first else { return .failure(ValueError("empty upstream server")) }
            var weight = 1
            for word in words.dropFirst() {
                guard word.hasPrefix("weight="), let value = Int(word.dropFirst(7)), (1...100).contains(value) else {
                    return .failure(ValueError("invalid \(quoted(String(word))) after the URL (use weight=N, 1-100)"))
                }
                weight = value
            }
            return Upstream.parse(String(first), baseDirectory: baseDirectory).map { UpstreamServer(target: $0, weight: weight) }
        }
    }

    public enum Balance: String, Sendable, Equatable, CaseIterable, CustomStringConvertible {
        case roundRobin = "round_robin"
        case leastConnections = "least_connections"

        public var description: String { rawValue }
    }

    /// How an upstream spreads requests over its servers and how it treats one that fails.
    public struct Balancing: Sendable, Equatable {
        public var balance = Balance.roundRobin
        /// Connections refused or reset in a row that take a server out; 0: never taken out.
        public var maxFails = 3
        /// How long a server taken out stays out before one request tries it again.
        public var failTimeout = TimeSpan.seconds(10)
        /// How often a server given by name is looked up again (its addresses may move).
        public var resolveInterval = TimeSpan.seconds(30)

        public init() {}
    }
}

extension ConfigSchema {
    /// `key` of `section`: one URL, or a list of them (each with an optional weight). The
    /// servers of one upstream share a scheme family (TLS or not) and a base path, since the
    /// request is written once for the upstream, whichever server takes it.
    func readServers(_ section: Section, key: String, required: Bool) -> [Config.UpstreamServer]? {
        let parse = { (text: String) in Config.UpstreamServer.parse(text, baseDirectory: baseDirectory) }
        let servers: [Config.UpstreamServer]?
        if section.isSequence(key) {
            servers = section.optionalList(key, parse)
            if servers?.isEmpty == true, !reader.hasErrors(at: Section.join(section.path, key)) {
                reader.report(.invalidValue, Section.join(section.path, key), at: section.location(of: key),
                              "an empty list of servers")
                return nil
            }
        } else if required {
            servers = section.required(key, parse).map { [$0] }
        } else {
            servers = section.optional(key, parse).map { [$0] }
        }
        guard let servers, let first = servers.first else { return nil }
        for (index, server) in servers.enumerated().dropFirst() {
            let mismatch: String? = if server.target.isTLS != first.target.isTLS {
                "\(server.target) and \(first.target) mix https with plain servers"
            } else if server.target.basePath != first.target.basePath {
                "\(server.target) has another base path than \(first.target)"
            } else { nil }
            if let mismatch {
                reader.report(.invalidValue, "\(Section.join(section.path, key))[\(index)]", at: section.location(of: key),
                              mismatch + " (the servers of one upstream must be alike)")
                return nil
            }
        }
        return servers
    }

    /// An entry's `balance`, `max_fails`, `fail_timeout` and `resolve_interval`, the top-level
    /// values by default.
    func readBalancing(_ section: Section, defaults: Config.Balancing) -> Config.Balancing {
        var balancing = defaults
        balancing.balance = section.value("balance", default: defaults.balance, Parse.oneOf(Config.Balance.self))
        balancing.maxFails = section.value("max_fails", default: defaults.maxFails, Parse.integer(in: 0...100))
        balancing.failTimeout = section.value("fail_timeout", default: defaults.failTimeout, Parse.positiveDuration)
        balancing.resolveInterval = section.value(
            "resolve_interval", default: defaults.resolveInterval, Parse.positiveDuration)
        return balancing
    }
}

extension Upstream {
    /// "" or the path every forwarded path is prefixed with.
    var basePath: String {
        switch self {
        case .http(_, _, let base), .https(_, _, let base): return base
        case .unix: return ""
        }
    }
}

/// `resolver`: the DNS server that names of upstream servers are looked up with (nginx's
/// `resolver`), an IP address with an optional port.
public struct ResolverAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public var description: String { "\(HostName.bracketed(host)):\(port)" }

    static func parse(_ text: String) -> Result<ResolverAddress, ValueError> {
        let usage = ValueError("invalid resolver \(quoted(text)) (an IP address with an optional port, e.g. 10.96.0.10 or [fd00::a]:53)")
        guard let (host, portText) = HostName.splitHostPort(text), HostName.isIPLiteral(host) else { return .failure(usage) }
        guard let portText else { return .success(ResolverAddress(host: host, port: 53)) }
        guard let port = HostName.port(portText, allowZero: false) else { return .failure(usage) }
        return .success(ResolverAddress(host: host, port: port))
    }
}
