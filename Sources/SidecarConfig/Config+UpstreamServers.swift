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

extension ConfigKey {
    /// `upstream`, or an entry's `url`: one server or a list of them, required.
    static func servers(
        _ field: WritableKeyPath<Root, [Config.UpstreamServer]> & Sendable, _ name: String, _ doc: String
    ) -> ConfigKey {
        var key = ConfigKey(
            name: name, doc: doc,
            read: { section, root, context in
                if let servers = section.servers(name, baseDirectory: context.baseDirectory) {
                    root[keyPath: field] = servers
                }
            },
            shown: { _ in "" },
            parsedShown: { _, _ in nil })
        key.isRequired = true
        return key
    }
}

extension Section {
    /// `key`: one URL, or a list of them (each with an optional weight). The servers of one
    /// upstream share a scheme family (TLS or not) and a base path, since the request is
    /// written once for the upstream, whichever server takes it.
    fileprivate func servers(_ key: String, baseDirectory: String) -> [Config.UpstreamServer]? {
        let parse = { (text: String) in Config.UpstreamServer.parse(text, baseDirectory: baseDirectory) }
        let keyPath = Section.join(path, key)
        let servers: [Config.UpstreamServer]?
        if isSequence(key) {
            servers = optionalList(key, parse)
            if servers?.isEmpty == true, !hasErrors(at: keyPath) {
                report(.invalidValue, keyPath, at: location(of: key), "an empty list of servers")
                return nil
            }
        } else {
            servers = required(key, parse).map { [$0] }
        }
        guard let servers, let first = servers.first else { return nil }
        for (index, server) in servers.enumerated().dropFirst() {
            let mismatch: String? = if server.target.isTLS != first.target.isTLS {
                "\(server.target) and \(first.target) mix https with plain servers"
            } else if server.target.basePath != first.target.basePath {
                "\(server.target) has another base path than \(first.target)"
            } else { nil }
            if let mismatch {
                report(.invalidValue, "\(keyPath)[\(index)]", at: location(of: key),
                       mismatch + " (the servers of one upstream must be alike)")
                return nil
            }
            // Listed twice, one server would be balanced as two (two pools, its failures
            // counted apart); a weight says what was meant.
            if servers[..<index].contains(where: { $0.target == server.target }) {
                report(.invalidValue, "\(keyPath)[\(index)]", at: location(of: key),
                       "\(server.target) is listed twice (weight=N gives a server a larger share)")
                return nil
            }
        }
        return servers
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
