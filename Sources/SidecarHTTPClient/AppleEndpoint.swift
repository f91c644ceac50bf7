import Glibc

/// Where Apple's endpoints live (`apple.base_url`): scheme, host, port and path prefix.
public struct AppleEndpoint: Equatable, Sendable {
    public enum Scheme: String, Sendable { case http, https }

    public enum ParseError: Error, Equatable, Sendable {
        case unsupportedScheme
        case missingHost
        case invalidPort
        case invalidCharacters
        /// Plain `http://` is allowed only for loopback hosts.
        case plainHTTPToNonLoopbackHost
    }

    public let scheme: Scheme
    /// Host without IPv6 brackets (`::1`, `127.0.0.1`, `appleid.apple.com`).
    public let host: String
    public let port: UInt16
    /// Path prefix without a trailing slash ("" for `https://appleid.apple.com`).
    public let basePath: String

    /// `allowPlainHTTP`: http to any host (an upstream on a private network, e.g. the
    /// notification forward target); Apple itself is reached over https unless on loopback.
    public init(baseURL: String, allowPlainHTTP: Bool = false) throws(ParseError) {
        let lower = baseURL.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            scheme = .https
            rest = baseURL.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            scheme = .http
            rest = baseURL.dropFirst(7)
        } else {
            throw .unsupportedScheme
        }
        guard rest.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }) else {
            throw .invalidCharacters
        }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var path = String(rest[authorityEnd...])
        guard !path.contains("?"), !path.contains("#"), !authority.contains("@") else { throw .invalidCharacters }
        while path.hasSuffix("/") { path.removeLast() }

        var hostPart = authority
        var portPart: Substring? = nil
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .missingHost }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .invalidPort }
                portPart = after.dropFirst()
            }
            guard AppleEndpoint.ipv6Literal(String(hostPart)) != nil else { throw .missingHost }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty else { throw .missingHost }
        host = hostPart.lowercased()
        if let portPart {
            guard !portPart.isEmpty, portPart.count <= 5, portPart.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let value = UInt16(portPart), value > 0 else { throw .invalidPort }
            port = value
        } else {
            port = scheme == .https ? 443 : 80
        }
        basePath = path
        if scheme == .http && !isLoopback && !allowPlainHTTP { throw .plainHTTPToNonLoopbackHost }
    }

    /// True for `localhost`, 127.0.0.0/8 and `::1` — hosts that never leave the machine.
    public var isLoopback: Bool {
        if host == "localhost" { return true }
        if let v4 = AppleEndpoint.ipv4Literal(host) { return v4.s_addr.bigEndian >> 24 == 127 }
        if let v6 = AppleEndpoint.ipv6Literal(host) {
            return withUnsafeBytes(of: v6) { Array($0) } == Array(repeating: 0, count: 15) + [1]
        }
        return false
    }

    /// True when the host is an IP address literal (verified as an IP, never looked up).
    public var isIPLiteral: Bool {
        AppleEndpoint.ipv4Literal(host) != nil || AppleEndpoint.ipv6Literal(host) != nil
    }

    /// The `Host` header value: the port only when it is not the scheme's default.
    var hostHeader: String {
        let name = AppleEndpoint.ipv6Literal(host) != nil ? "[\(host)]" : host
        let defaultPort: UInt16 = scheme == .https ? 443 : 80
        return port == defaultPort ? name : "\(name):\(port)"
    }

    static func ipv4Literal(_ text: String) -> in_addr? {
        var addr = in_addr()
        return inet_pton(AF_INET, text, &addr) == 1 ? addr : nil
    }

    static func ipv6Literal(_ text: String) -> in6_addr? {
        var addr = in6_addr()
        return inet_pton(AF_INET6, text, &addr) == 1 ? addr : nil
    }
}
