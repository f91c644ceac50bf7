/// Validators for the names and identifiers that appear in the configuration.
enum Names {
    /// RFC 9110 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    static func isToken(_ text: String) -> Bool { !text.isEmpty && text.utf8.allSatisfy(isTokenByte) }

    static func headerName(_ text: String) -> Result<String, ValueError> {
        isToken(text) ? .success(text)
            : .failure(ValueError("invalid header name \(quoted(text)) (letters, digits and !#$%&'*+-.^_`|~ only)"))
    }

    static func cookieName(_ text: String) -> Result<String, ValueError> {
        isToken(text) ? .success(text)
            : .failure(ValueError("invalid cookie name \(quoted(text)) (letters, digits and !#$%&'*+-.^_`|~ only)"))
    }

    /// Lower-cased domain, e.g. `example.com`; a leading `@` or `.` gets a hint.
    static func emailDomain(_ text: String) -> Result<String, ValueError> {
        if text.hasPrefix("@") { return .failure(ValueError("\(quoted(text)): write the domain without @, e.g. \(quoted(String(text.dropFirst())))")) }
        let lower = text.lowercased()
        guard HostName.isValidDNSName(lower), !lower.hasSuffix("."), lower.contains(".") else {
            return .failure(ValueError("invalid email domain \(quoted(text)) (e.g. example.com)"))
        }
        return .success(lower)
    }

    /// Lower-cased address with exactly one `@` and a valid domain.
    static func email(_ text: String) -> Result<String, ValueError> {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 64,
              parts[0].unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f }),
              case .success(let domain) = emailDomain(String(parts[1])) else {
            return .failure(ValueError("invalid email address \(quoted(text))"))
        }
        return .success(parts[0].lowercased() + "@" + domain)
    }

    /// A glob for access paths: starts with `/`, printable ASCII, no query or fragment.
    static func pathGlob(_ text: String) -> Result<String, ValueError> {
        guard text.hasPrefix("/") else { return .failure(ValueError("path pattern \(quoted(text)) must start with /")) }
        guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f }), !text.contains("?"),
              !text.contains("#") else {
            return .failure(ValueError("path pattern \(quoted(text)) may hold only printable ASCII without ? or #"))
        }
        return .success(text)
    }

    /// `routes.prefix`: `/x` or `/x/y`, no trailing slash, no globs.
    static func routePrefix(_ text: String) -> Result<String, ValueError> {
        let usage = ValueError("invalid route prefix \(quoted(text)) (a path like /.auth, no trailing /)")
        guard text.count >= 2, text.hasPrefix("/"), !text.hasSuffix("/"), !text.contains("//") else { return .failure(usage) }
        let allowed = text.utf8.allSatisfy { byte in
            isTokenByte(byte) && byte != UInt8(ascii: "*") && byte != UInt8(ascii: "%") || byte == UInt8(ascii: "/")
        }
        guard allowed, !text.split(separator: "/").contains(where: { $0 == "." || $0 == ".." }) else { return .failure(usage) }
        return .success(text)
    }

    /// Apple team and key ids: 10 upper-case letters or digits.
    static func appleID(_ text: String, what: String) -> Result<String, ValueError> {
        guard text.utf8.count == 10, text.utf8.allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return .failure(ValueError("invalid \(what) \(quoted(text)) (10 upper-case letters or digits, as shown by Apple)"))
        }
        return .success(text)
    }

    /// Services ids and bundle ids: reverse-DNS style identifiers.
    static func bundleID(_ text: String, what: String) -> Result<String, ValueError> {
        guard !text.isEmpty, text.utf8.count <= 255, text.utf8.allSatisfy({ byte in
            isTokenByte(byte) && !"!#$%&'*+^`|~".utf8.contains(byte)
        }) else {
            return .failure(ValueError("invalid \(what) \(quoted(text)) (e.g. com.example.app)"))
        }
        return .success(text)
    }

    /// An Android application id (`apple.android_packages`): at least two dot-separated
    /// segments, each a letter followed by letters, digits or `_` (Android's own rule), so it
    /// can go into an `intent://…;package=…;end` URL as is.
    static func androidPackage(_ text: String) -> Result<String, ValueError> {
        func isLetter(_ c: UInt8) -> Bool { (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) }
        let segments = text.split(separator: ".", omittingEmptySubsequences: false)
        let valid = text.utf8.count <= 255 && segments.count >= 2 && segments.allSatisfy { segment in
            guard let first = segment.utf8.first, isLetter(first) else { return false }
            return segment.utf8.allSatisfy { isLetter($0) || (0x30...0x39).contains($0) || $0 == 0x5F }
        }
        return valid ? .success(text) : .failure(ValueError("invalid Android package \(quoted(text)) (e.g. com.example.app)"))
    }

    /// An `access.allowed_redirect_hosts` entry: `host` (port 443) or `host:port`.
    static func redirectHost(_ text: String) -> Result<RedirectHost, ValueError> {
        let usage = ValueError("invalid redirect host \(quoted(text)) (host or host:port, no scheme)")
        guard !text.contains("/"), let (rawHost, portText) = HostName.splitHostPort(text),
              let host = HostName.normalized(rawHost) else { return .failure(usage) }
        guard let portText else { return .success(RedirectHost(host: host, port: 443)) }
        guard let port = HostName.port(portText, allowZero: false) else { return .failure(usage) }
        return .success(RedirectHost(host: host, port: port))
    }
}
