/// Where Redis is, as `revocations.store` names it and the store dials it: one server
/// (`redis://host:port/db`), or the master of a set that Redis Sentinel watches
/// (`redis+sentinel://h1:26379,h2:26379/<master>/db`); `rediss` for TLS to every node.
public struct RedisAddress: Sendable, Equatable, CustomStringConvertible {
    public enum Location: Sendable, Equatable {
        case server(host: String, port: UInt16)
        /// The sentinels asked, in turn, where the master named `masterName` is.
        case sentinels([Node], masterName: String)
    }

    public struct Node: Sendable, Equatable {
        public var host: String
        public var port: UInt16

        public init(host: String, port: UInt16) {
            self.host = host
            self.port = port
        }
    }

    public var location: Location
    public var database: Int
    /// `rediss://`: TLS, verified against the system's roots and `revocations.ca_file`. With
    /// Sentinel, to the sentinels and to the data nodes alike.
    public var tls: Bool

    public init(location: Location, database: Int = 0, tls: Bool = false) {
        self.location = location
        self.database = database
        self.tls = tls
    }

    public init(host: String, port: UInt16, database: Int = 0, tls: Bool = false) {
        self.init(location: .server(host: host, port: port), database: database, tls: tls)
    }

    /// Behind Sentinel: the master's name.
    public var masterName: String? {
        if case .sentinels(_, let name) = location { return name }
        return nil
    }

    public var description: String {
        let scheme = tls ? "rediss" : "redis"
        switch location {
        case .server(let host, let port):
            return "\(scheme)://\(Self.bracketed(host)):\(port)/\(database)"
        case .sentinels(let nodes, let masterName):
            let list = nodes.map { "\(Self.bracketed($0.host)):\($0.port)" }.joined(separator: ",")
            return "\(scheme)+sentinel://\(list)/\(masterName)/\(database)"
        }
    }

    /// An IPv6 literal in brackets, as a URL writes it.
    private static func bracketed(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }
}
