/// `redis+sentinel://h1:26379,h2:26379/<master>[/db]` (and `rediss+sentinel://`): the
/// sentinels to ask, the name of the master they watch, and the database on it.
public struct SentinelAddress: Sendable, Equatable, CustomStringConvertible {
    public struct Node: Sendable, Equatable {
        public var host: String
        public var port: UInt16

        public init(host: String, port: UInt16) {
            self.host = host
            self.port = port
        }
    }

    public var sentinels: [Node]
    public var masterName: String
    public var database: Int
    public var tls: Bool

    public init(sentinels: [Node], masterName: String, database: Int = 0, tls: Bool = false) {
        self.sentinels = sentinels
        self.masterName = masterName
        self.database = database
        self.tls = tls
    }

    public var description: String {
        let nodes = sentinels.map { "\(HostName.bracketed($0.host)):\($0.port)" }.joined(separator: ",")
        return "\(tls ? "rediss" : "redis")+sentinel://\(nodes)/\(masterName)/\(database)"
    }

    /// Sentinel's own default port.
    static let defaultPort: UInt16 = 26379
    /// More sentinels than this is a mistake (a quorum needs three or five).
    static let maximumSentinels = 16

    /// Parses the text after `redis+sentinel://` or `rediss+sentinel://`.
    static func parse(_ text: String, tls: Bool) -> Result<SentinelAddress, ValueError> {
        let scheme = tls ? "rediss+sentinel://" : "redis+sentinel://"
        let usage = ValueError(
            "invalid redis sentinel address \(quoted(text)) (\(scheme)host[:port][,host[:port]…]/master[/db])")
        guard text.hasPrefix(scheme) else { return .failure(usage) }
        let rest = text.dropFirst(scheme.count)
        guard !rest.contains("@") else {
            return .failure(ValueError(
                "redis address must not carry credentials; set revocations.password (the Redis servers) and "
                    + "revocations.sentinel_password (the sentinels), each env:NAME or file:/path"))
        }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3 else { return .failure(usage) }
        var sentinels: [Node] = []
        for entry in parts[0].split(separator: ",", omittingEmptySubsequences: false) {
            guard let (rawHost, portText) = HostName.splitHostPort(String(entry)),
                  let host = HostName.normalized(rawHost, allowUnderscore: true) else { return .failure(usage) }
            var port = defaultPort
            if let portText {
                guard let parsed = HostName.port(portText, allowZero: false) else { return .failure(usage) }
                port = parsed
            }
            let node = Node(host: host, port: port)
            guard !sentinels.contains(node) else {
                return .failure(ValueError("sentinel \(HostName.bracketed(host)):\(port) is listed twice in \(quoted(text))"))
            }
            sentinels.append(node)
        }
        guard sentinels.count <= maximumSentinels else {
            return .failure(ValueError("more than \(maximumSentinels) sentinels in \(quoted(text))"))
        }
        let masterName = String(parts[1])
        guard isMasterName(masterName) else {
            return .failure(ValueError(
                "invalid sentinel master name \(quoted(masterName)) in \(quoted(text)) (1 to 64 letters, digits, '.', '_' or '-')"))
        }
        var database = 0
        if parts.count == 3, !parts[2].isEmpty {
            guard parts[2].count <= 5, let parsed = Int(parts[2]), parsed >= 0 else { return .failure(usage) }
            database = parsed
        }
        return .success(SentinelAddress(sentinels: sentinels, masterName: masterName, database: database, tls: tls))
    }

    private static func isMasterName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
    }
}
