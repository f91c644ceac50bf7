/// An absolute http(s) URL as configured (public_url, apple.base_url, notifications.forward_to).
/// Scheme and host are lower-cased; `path` is "" or starts with `/` without a trailing `/`.
public struct HTTPURL: Sendable, Hashable, CustomStringConvertible {
    public var scheme: String
    /// Without brackets for IPv6.
    public var host: String
    /// The effective port (80/443 when the URL names none).
    public var port: UInt16
    public var path: String
    /// Without the `?`; empty when none.
    public var query: String

    public var isHTTPS: Bool { scheme == "https" }
    public var isLoopback: Bool { HostName.isLoopback(host) }
    private var defaultPort: UInt16 { isHTTPS ? 443 : 80 }

    /// `scheme://host[:port]`, the default port omitted.
    public var origin: String {
        "\(scheme)://\(HostName.bracketed(host))" + (port == defaultPort ? "" : ":\(port)")
    }

    /// `host[:port]` as in a `Host` header (default port omitted).
    public var authority: String { HostName.bracketed(host) + (port == defaultPort ? "" : ":\(port)") }

    /// The normalized URL: origin + path [+ ?query].
    public var description: String { origin + path + (query.isEmpty ? "" : "?\(query)") }

    static func parse(_ text: String, allowPath: Bool, allowQuery: Bool,
                      allowUnderscoreHost: Bool = false) -> Result<HTTPURL, ValueError> {
        func fail(_ why: String) -> Result<HTTPURL, ValueError> { .failure(ValueError("\(quoted(text)) \(why)")) }
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value >= 0x7f }) else {
            return fail("contains spaces, control or non-ASCII characters")
        }
        guard let schemeEnd = text.range(of: "://") else { return fail("is not an absolute URL (e.g. https://app.example.com)") }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return fail("must use http or https") }
        var rest = text[schemeEnd.upperBound...]
        if rest.contains("#") { return fail("must not have a #fragment") }
        var query = ""
        if let mark = rest.firstIndex(of: "?") {
            guard allowQuery else { return fail("must not have a ?query") }
            query = String(rest[rest.index(after: mark)...])
            rest = rest[..<mark]
        }
        let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var path = String(rest[authorityEnd...])
        if authority.contains("@") { return fail("must not contain user:password@") }
        // A password with an unencoded `/`, `?` or `#` ends the authority early: what looks
        // like its host or port is then part of the password, and must not be echoed alone.
        let mayHoldPassword = text.contains("@")
        guard let (rawHost, portText) = HostName.splitHostPort(String(authority)), !rawHost.isEmpty else {
            return fail("has no valid host")
        }
        guard let host = HostName.normalized(rawHost, allowUnderscore: allowUnderscoreHost) else {
            return fail(mayHoldPassword ? "has an invalid host (user:password@ is not allowed)" : "has an invalid host \(quoted(rawHost))")
        }
        var port: UInt16 = scheme == "https" ? 443 : 80
        if let portText {
            guard let parsed = HostName.port(portText, allowZero: false) else {
                return fail(mayHoldPassword ? "has an invalid port (user:password@ is not allowed)"
                    : "has an invalid port \(quoted(String(portText))) (1-65535)")
            }
            port = parsed
        }
        while path.hasSuffix("/") { path.removeLast() }
        if !path.isEmpty {
            guard allowPath else { return fail("must not have a path (only scheme, host and port)") }
            guard !path.contains("//"), !path.split(separator: "/").contains(where: { $0 == "." || $0 == ".." }) else {
                return fail("has an unnormalized path")
            }
        }
        return .success(HTTPURL(scheme: scheme, host: host, port: port, path: path, query: query))
    }
}
