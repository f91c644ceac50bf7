import Glibc
import SidecarEvent
import SidecarRESP

/// Where and how to reach Redis: the address `revocations.store` names, with what the
/// other `revocations.*` keys add (`.password`, `.sentinel_password`, `.ca_file`, `.key_prefix`).
public struct RedisEndpoint: Sendable {
    public var address: RedisAddress
    /// Extra trust anchors for `rediss://`, beside the system's.
    public var caFile: String?
    /// The data nodes' password (the master's; never a sentinel's).
    public var password: [UInt8]?
    /// The sentinels' own password, nil for none.
    public var sentinelPassword: [UInt8]?
    public var keyPrefix: String

    public init(address: RedisAddress, caFile: String? = nil, password: [UInt8]? = nil,
                sentinelPassword: [UInt8]? = nil, keyPrefix: String = "sidecar:") {
        self.address = address
        self.caFile = caFile
        self.password = password
        self.sentinelPassword = sentinelPassword
        self.keyPrefix = keyPrefix
    }

    public var description: String { address.description }

    var location: RedisAddress.Location { address.location }
    var database: Int { address.database }
    var tls: Bool { address.tls }

    /// Behind Sentinel: the sentinels and the master's name.
    var sentinels: (nodes: [RedisAddress.Node], masterName: String)? {
        if case .sentinels(let nodes, let masterName) = address.location { return (nodes, masterName) }
        return nil
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
