import Glibc
import SidecarEvent

/// Where and how to reach Redis (`revocations.store`, `.password`, `.sentinel_password`,
/// `.ca_file`).
public struct RedisEndpoint: Sendable {
    /// One server, or the master of a set that Redis Sentinel watches.
    public enum Location: Sendable, Equatable {
        case server(host: String, port: UInt16)
        case sentinels(SentinelSettings)
    }

    public var location: Location
    public var database: Int
    /// `rediss://`: TLS, verified like the Apple client (system roots plus `caFile`). With
    /// Sentinel, to the sentinels and to the data nodes alike.
    public var tls: Bool
    public var caFile: String?
    /// The data nodes' password (the master's; never a sentinel's).
    public var password: [UInt8]?
    public var keyPrefix: String

    public init(host: String, port: UInt16, database: Int, tls: Bool, caFile: String? = nil,
                password: [UInt8]? = nil, keyPrefix: String = "sidecar:") {
        self.init(location: .server(host: host, port: port), database: database, tls: tls, caFile: caFile,
                  password: password, keyPrefix: keyPrefix)
    }

    public init(location: Location, database: Int, tls: Bool, caFile: String? = nil,
                password: [UInt8]? = nil, keyPrefix: String = "sidecar:") {
        self.location = location
        self.database = database
        self.tls = tls
        self.caFile = caFile
        self.password = password
        self.keyPrefix = keyPrefix
    }

    public var description: String {
        switch location {
        case .server(let host, let port):
            return "\(tls ? "rediss" : "redis")://\(RedisPeer.hostPort(host, port))/\(database)"
        case .sentinels(let sentinels):
            let nodes = sentinels.nodes.map { RedisPeer.hostPort($0.host, $0.port) }.joined(separator: ",")
            return "\(tls ? "rediss" : "redis")+sentinel://\(nodes)/\(sentinels.masterName)/\(database)"
        }
    }

    var sentinels: SentinelSettings? {
        if case .sentinels(let settings) = location { return settings }
        return nil
    }
}

/// `redis+sentinel://h1:26379,h2:26379/<master>`: the sentinels asked, in turn, where the
/// master named `masterName` is.
public struct SentinelSettings: Sendable, Equatable {
    public struct Node: Sendable, Equatable {
        public var host: String
        public var port: UInt16

        public init(host: String, port: UInt16) {
            self.host = host
            self.port = port
        }
    }

    public var nodes: [Node]
    public var masterName: String
    /// The sentinels' own password (`revocations.sentinel_password`), nil for none.
    public var password: [UInt8]?

    public init(nodes: [Node], masterName: String, password: [UInt8]? = nil) {
        self.nodes = nodes
        self.masterName = masterName
        self.password = password
    }

    public static func == (a: SentinelSettings, b: SentinelSettings) -> Bool {
        a.nodes == b.nodes && a.masterName == b.masterName && a.password == b.password
    }
}

/// A server to dial: the name its certificate is checked against, and its address.
struct RedisPeer: Sendable, Equatable, CustomStringConvertible {
    var host: String
    var port: UInt16
    var address: SocketAddress

    var isIPLiteral: Bool { (try? SocketAddress(host: host, port: port)) != nil }
    var description: String { Self.hostPort(host, port) }

    static func hostPort(_ host: String, _ port: UInt16) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// getaddrinfo for a name, at once for an IP literal. It may block on DNS, so only the
    /// store's own thread calls it; worker loops never do.
    static func resolve(host: String, port: UInt16) -> RedisPeer? {
        if let literal = try? SocketAddress(host: host, port: port) { return RedisPeer(host: host, port: port, address: literal) }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else { return nil }
        defer { freeaddrinfo(result) }
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in
            raw.copyMemory(from: UnsafeRawBufferPointer(start: first.pointee.ai_addr, count: Int(first.pointee.ai_addrlen)))
        }
        return RedisPeer(host: host, port: port, address: SocketAddress(storage: storage, length: first.pointee.ai_addrlen))
    }
}
