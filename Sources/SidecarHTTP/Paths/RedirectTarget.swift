/// Redirect-target validation, compiled once from configuration.
///
/// A target is accepted when it is made only of characters a URI may contain (so no ASCII
/// or Unicode whitespace, no control character, no backslash, nothing non-ASCII: Unicode
/// look-alike slashes never pass), and is either
/// - a path-absolute reference: exactly one leading `/`, whose path part (before `?`/`#`),
///   percent-decoded once, has valid escapes, no backslash, no C0/DEL/C1 control and does
///   not start with `//`; or
/// - an absolute `https` URL (scheme case-insensitive) without userinfo whose host and port
///   equal the public origin's or an allowed host's (a bare `host` entry means port 443).
public struct RedirectPolicy: Sendable, Hashable {
    struct HostPort: Sendable, Hashable {
        var host: [UInt8]  // lower-case
        var port: Int
    }

    private let trusted: Set<HostPort>

    /// `publicOrigin` like `https://app.example.com[:port][/...]`; `allowedHosts` entries
    /// `host` or `host:port`. Entries that cannot be parsed are ignored.
    public init(publicOrigin: String, allowedHosts: [String]) {
        var trusted = Set<HostPort>()
        let origin = Array(publicOrigin.utf8)
        if let (scheme, rest) = Self.splitScheme(origin[...]) {
            let defaultPort = Self.equalsLower(scheme, "https") ? 443 : 80
            let authority = rest.prefix { $0 != 0x2F && $0 != 0x3F && $0 != 0x23 }
            if let hp = Self.parseHostPort(authority, defaultPort: defaultPort) { trusted.insert(hp) }
        }
        for entry in allowedHosts {
            if let hp = Self.parseHostPort(Array(entry.utf8)[...], defaultPort: 443) { trusted.insert(hp) }
        }
        self.trusted = trusted
    }

    /// The target itself when safe, nil otherwise (the caller then uses `/`).
    public func safeTarget(_ raw: String) -> String? {
        let bytes = Array(raw.utf8)
        guard let first = bytes.first, bytes.allSatisfy(Self.isURIChar) else { return nil }
        if first == 0x2F {
            return Self.isSafeLocalPath(bytes) ? raw : nil
        }
        guard let (scheme, rest) = Self.splitScheme(bytes[...]), Self.equalsLower(scheme, "https")
        else { return nil }
        let authority = rest.prefix { $0 != 0x2F && $0 != 0x3F && $0 != 0x23 }
        guard !authority.contains(0x40),  // userinfo
              let hp = Self.parseHostPort(authority, defaultPort: 443), trusted.contains(hp)
        else { return nil }
        return raw
    }

    // MARK: rules

    private static func isSafeLocalPath(_ bytes: [UInt8]) -> Bool {
        guard bytes.count == 1 || bytes[1] != 0x2F else { return false }
        let pathEnd = bytes.firstIndex { $0 == 0x3F || $0 == 0x23 } ?? bytes.count
        var decoded: [UInt8] = []
        decoded.reserveCapacity(pathEnd)
        var i = 0
        while i < pathEnd {
            var c = bytes[i]
            if c == 0x25 {
                guard i + 2 < pathEnd, let hi = ASCII.hexValue(bytes[i + 1]), let lo = ASCII.hexValue(bytes[i + 2])
                else { return false }
                c = hi << 4 | lo
                i += 3
            } else {
                i += 1
            }
            if c < 0x20 || c == 0x7F || c == 0x5C { return false }
            // C1 controls U+0080...U+009F are C2 80...C2 9F in UTF-8.
            if c >= 0x80, c <= 0x9F, decoded.last == 0xC2 { return false }
            decoded.append(c)
        }
        if decoded.count >= 2 && decoded[0] == 0x2F && decoded[1] == 0x2F { return false }
        // Nor may removing dot segments turn it into `//host` (`/a/..//evil.com`).
        var normalized: [UInt8] = []
        let valid = bytes.withUnsafeBytes { buf in
            (try? PathNormalizer.normalize(
                UnsafeRawBufferPointer(rebasing: buf[0..<pathEnd]), separators: .keep, mergingEmptySegments: false,
                into: &normalized)) != nil
        }
        return valid && !(normalized.count >= 2 && normalized[1] == 0x2F)
    }

    /// RFC 3986 characters: unreserved, reserved and `%`.
    private static func isURIChar(_ c: UInt8) -> Bool {
        switch c {
        case 0x21, 0x23...0x3B, 0x3D, 0x3F...0x5B, 0x5D, 0x5F, 0x61...0x7A, 0x7E: return true
        default: return false
        }
    }

    /// `scheme ":" "//" rest`, scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
    private static func splitScheme(_ bytes: ArraySlice<UInt8>) -> (ArraySlice<UInt8>, ArraySlice<UInt8>)? {
        guard let colon = bytes.firstIndex(of: 0x3A), colon > bytes.startIndex else { return nil }
        let scheme = bytes[..<colon]
        guard scheme.allSatisfy({ ASCII.lower($0) &- 0x61 < 26 || ASCII.isDigit($0) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E })
        else { return nil }
        let rest = bytes[(colon + 1)...]
        guard rest.count >= 2, rest.first == 0x2F, rest.dropFirst().first == 0x2F else { return nil }
        return (scheme, rest.dropFirst(2))
    }

    /// `reg-name [":" port]` with a DNS-style name, or `"[" IPv6 "]" [":" port]`.
    static func parseHostPort(_ a: ArraySlice<UInt8>, defaultPort: Int) -> HostPort? {
        var host: ArraySlice<UInt8>
        var portPart: ArraySlice<UInt8>?
        if a.first == 0x5B {
            guard let close = a.firstIndex(of: 0x5D) else { return nil }
            host = a[a.startIndex...close]
            let inner = a[(a.startIndex + 1)..<close]
            guard !inner.isEmpty, inner.allSatisfy({ ASCII.hexValue($0) != nil || $0 == 0x3A || $0 == 0x2E })
            else { return nil }
            let after = a[(close + 1)...]
            if !after.isEmpty {
                guard after.first == 0x3A else { return nil }
                portPart = after.dropFirst()
            }
        } else {
            if let colon = a.firstIndex(of: 0x3A) {
                host = a[..<colon]
                portPart = a[(colon + 1)...]
            } else {
                host = a
            }
            guard !host.isEmpty, host.allSatisfy({
                ASCII.lower($0) &- 0x61 < 26 || ASCII.isDigit($0) || $0 == 0x2D || $0 == 0x2E
            }) else { return nil }
        }
        var port = defaultPort
        if let p = portPart {
            guard !p.isEmpty, p.count <= 5, p.allSatisfy(ASCII.isDigit) else { return nil }
            port = p.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            guard port > 0, port <= 65535 else { return nil }
        }
        return HostPort(host: host.map(ASCII.lower), port: port)
    }

    private static func equalsLower(_ bytes: ArraySlice<UInt8>, _ lower: StaticString) -> Bool {
        guard bytes.count == lower.utf8CodeUnitCount else { return false }
        return zip(bytes, UnsafeBufferPointer(start: lower.utf8Start, count: lower.utf8CodeUnitCount))
            .allSatisfy { ASCII.lower($0) == $1 }
    }
}

/// Redirect-target validation as one pure function: `raw` if it is a safe redirect target,
/// else nil (use `/`).
/// Prefer compiling a `RedirectPolicy` once when checking many targets.
public func safeRedirectTarget(raw: String, publicOrigin: String, allowedHosts: [String]) -> String? {
    RedirectPolicy(publicOrigin: publicOrigin, allowedHosts: allowedHosts).safeTarget(raw)
}
