/// Where a listener binds: `host:port`, `[::1]:port` or `unix:/path`.
public enum ListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// `host` is an IP literal (IPv6 without brackets) or a name; port 0 = any free port.
    case tcp(host: String, port: UInt16)
    case unix(path: String)

    public var description: String {
        switch self {
        case .tcp(let host, let port): return "\(HostName.bracketed(host)):\(port)"
        case .unix(let path): return "unix:\(path)"
        }
    }

    /// Parses a listen address; relative unix paths are resolved against `baseDirectory`.
    static func parse(_ text: String, baseDirectory: String) -> Result<ListenAddress, ValueError> {
        if text.hasPrefix("unix:") {
            return UnixSocketPath.parse(String(text.dropFirst(5)), baseDirectory: baseDirectory).map { .unix(path: $0) }
        }
        let usage = ValueError("invalid listen address \(quoted(text)) (use host:port, [::1]:port or unix:/path)")
        guard let (host, portText) = HostName.splitHostPort(text) else { return .failure(usage) }
        guard let portText else {
            return .failure(ValueError("listen address \(quoted(text)) has no port (use host:port, e.g. 127.0.0.1:8080)"))
        }
        guard let port = HostName.port(portText, allowZero: true) else {
            return .failure(ValueError("invalid port \(quoted(String(portText))) in \(quoted(text)) (0-65535)"))
        }
        guard !host.isEmpty else {
            return .failure(ValueError("listen address \(quoted(text)) has no host (use 0.0.0.0:\(port) for every interface)"))
        }
        guard let normalized = HostName.normalized(host) else {
            return .failure(ValueError("invalid host \(quoted(host)) in listen address \(quoted(text))"))
        }
        return .success(.tcp(host: normalized, port: port))
    }

    /// An address given on a command line (a relative unix path from the working directory).
    public static func parsed(_ text: String) -> ListenAddress? { try? parse(text, baseDirectory: ".").get() }
}

/// The protected app: `http://host:port[/base]`, `https://host:port[/base]` or `unix:/path`.
public enum Upstream: Sendable, Hashable, CustomStringConvertible {
    /// `basePath` is "" or starts with `/` and has no trailing `/`; it prefixes every forwarded path.
    case http(host: String, port: UInt16, basePath: String)
    /// As `http`, over TLS (verified as the upstream's TLS keys say).
    case https(host: String, port: UInt16, basePath: String)
    case unix(path: String)

    public var description: String {
        switch self {
        case .http(let host, let port, let basePath): return "http://\(HostName.bracketed(host)):\(port)\(basePath)"
        case .https(let host, let port, let basePath): return "https://\(HostName.bracketed(host)):\(port)\(basePath)"
        case .unix(let path): return "unix:\(path)"
        }
    }

    /// TLS to the upstream.
    public var isTLS: Bool {
        if case .https = self { return true }
        return false
    }

    /// The host name or IP literal of the URL; nil for a unix socket.
    public var host: String? {
        switch self {
        case .http(let host, _, _), .https(let host, _, _): return host
        case .unix: return nil
        }
    }

    static func parse(_ text: String, baseDirectory: String) -> Result<Upstream, ValueError> {
        if text.hasPrefix("unix:") {
            return UnixSocketPath.parse(String(text.dropFirst(5)), baseDirectory: baseDirectory).map { .unix(path: $0) }
        }
        // Every refusal ends with the same forms, so the examples never disagree.
        let forms = "(use http://host:port[/base], e.g. http://127.0.0.1:3000, https://host:port[/base], "
            + "or unix:/path, e.g. unix:/run/app.sock)"
        if let separator = text.range(of: "://"), !["http", "https"].contains(text[..<separator.lowerBound].lowercased()) {
            return .failure(ValueError("invalid upstream scheme \(quoted(String(text[..<separator.lowerBound]))) \(forms)"))
        }
        switch HTTPURL.parse(text, allowPath: true, allowQuery: false, allowUnderscoreHost: true) {
        case .failure(let error):
            return .failure(ValueError("invalid upstream: \(error.message) \(forms)"))
        case .success(let url):
            switch url.scheme {
            case "http": return .success(.http(host: url.host, port: url.port, basePath: url.path))
            case "https": return .success(.https(host: url.host, port: url.port, basePath: url.path))
            default: return .failure(ValueError("invalid upstream scheme \(quoted(url.scheme)) \(forms)"))
            }
        }
    }
}

enum UnixSocketPath {
    /// sun_path holds 108 bytes including the terminating NUL on Linux.
    static let maxLength = 107

    static func parse(_ path: String, baseDirectory: String) -> Result<String, ValueError> {
        guard !path.isEmpty else { return .failure(ValueError("unix: needs a socket path, e.g. unix:/run/app.sock")) }
        guard !path.utf8.contains(0) else { return .failure(ValueError("socket path contains a NUL byte")) }
        let resolved = FilePath.resolve(path, against: baseDirectory)
        guard resolved.utf8.count <= maxLength else {
            return .failure(ValueError("socket path \(quoted(resolved)) is longer than \(maxLength) bytes"))
        }
        return .success(resolved)
    }
}
