import SidecarRESP

/// Reading `revocations.store`'s address (the type is the store's, which dials it).
extension RedisAddress {
    static let defaultPort: UInt16 = 6379
    /// Sentinel's own default port.
    static let defaultSentinelPort: UInt16 = 26379
    /// More sentinels than this is a mistake (a quorum needs three or five).
    static let maximumSentinels = 16

    /// `redis://` or `rediss://`, `host[:port][/db]` after it.
    static func parseServer(_ text: String, tls: Bool) -> Result<RedisAddress, ValueError> {
        let scheme = tls ? "rediss://" : "redis://"
        let usage = ValueError("invalid redis address \(quoted(text)) (\(scheme)host[:port][/db])")
        guard text.hasPrefix(scheme) else { return .failure(usage) }
        var rest = text.dropFirst(scheme.count)
        guard !rest.contains("@") else {
            return .failure(ValueError("redis address must not carry credentials; set revocations.password (env:NAME or file:/path)"))
        }
        var database = 0
        if let slash = rest.firstIndex(of: "/") {
            let dbText = rest[rest.index(after: slash)...]
            if !dbText.isEmpty {
                guard let parsed = databaseNumber(dbText) else { return .failure(usage) }
                database = parsed
            }
            rest = rest[..<slash]
        }
        guard let node = node(String(rest), defaultPort: defaultPort) else { return .failure(usage) }
        return .success(RedisAddress(host: node.host, port: node.port, database: database, tls: tls))
    }

    /// `redis+sentinel://` or `rediss+sentinel://`, `host[:port][,host[:port]…]/master[/db]` after it.
    static func parseSentinels(_ text: String, tls: Bool) -> Result<RedisAddress, ValueError> {
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
            guard let node = node(String(entry), defaultPort: defaultSentinelPort) else { return .failure(usage) }
            guard !sentinels.contains(node) else {
                return .failure(ValueError(
                    "sentinel \(HostName.bracketed(node.host)):\(node.port) is listed twice in \(quoted(text))"))
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
            guard let parsed = databaseNumber(parts[2]) else { return .failure(usage) }
            database = parsed
        }
        return .success(RedisAddress(location: .sentinels(sentinels, masterName: masterName), database: database, tls: tls))
    }

    private static func node(_ text: String, defaultPort: UInt16) -> Node? {
        guard let (rawHost, portText) = HostName.splitHostPort(text),
              let host = HostName.normalized(rawHost, allowUnderscore: true) else { return nil }
        guard let portText else { return Node(host: host, port: defaultPort) }
        return HostName.port(portText, allowZero: false).map { Node(host: host, port: $0) }
    }

    private static func databaseNumber(_ text: Substring) -> Int? {
        guard text.count <= 5, let parsed = Int(text), parsed >= 0 else { return nil }
        return parsed
    }

    private static func isMasterName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
    }
}
