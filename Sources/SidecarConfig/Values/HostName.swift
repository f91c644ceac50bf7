import SidecarHTTP

/// Host-name rules shared by addresses and URLs.
public enum HostName {
    /// `[::1]` for IPv6 literals, the host unchanged otherwise.
    public static func bracketed(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }

    /// `localhost`, `*.localhost`, 127.0.0.0/8 and ::1 — hosts browsers treat as secure contexts.
    public static func isLoopback(_ host: String) -> Bool {
        let lower = host.lowercased()
        if lower == "localhost" || lower.hasSuffix(".localhost") { return true }
        return IPAddress(lower)?.isLoopback ?? false
    }

    public static func isIPLiteral(_ host: String) -> Bool { IPAddress(host) != nil }

    /// A DNS name: dot-separated labels of letters, digits and inner hyphens (underscores too when
    /// allowed, as container service names use them), at most 253 characters.
    public static func isValidDNSName(_ host: String, allowUnderscore: Bool = false) -> Bool {
        guard !host.isEmpty, host.utf8.count <= 253 else { return false }
        let name = host.hasSuffix(".") ? String(host.dropLast()) : host
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        // An all-numeric last label is a mistyped IPv4 address, not a name.
        if let last = labels.last, !last.isEmpty, last.allSatisfy({ $0.isASCII && $0.isNumber }) { return false }
        return labels.allSatisfy { label in
            (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                && label.utf8.allSatisfy { byte in
                    switch byte {
                    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                         UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                        return true
                    case UInt8(ascii: "_"): return allowUnderscore
                    default: return false
                    }
                }
        }
    }

    /// Validates a host as written in a URL or address (IPv6 without brackets); returns it
    /// lower-cased, or nil.
    static func normalized(_ host: String, allowUnderscore: Bool = false) -> String? {
        let lower = host.lowercased()
        if lower.contains(":") { return IPAddress(lower) != nil && !lower.contains("%") ? lower : nil }
        if IPAddress(lower) != nil || isValidDNSName(lower, allowUnderscore: allowUnderscore) { return lower }
        return nil
    }

    /// Splits `host`, `host:port`, `[v6]` or `[v6]:port`; the port text is returned unparsed.
    static func splitHostPort(_ text: String) -> (host: String, port: Substring?)? {
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if rest.isEmpty { return (host, nil) }
            guard rest.first == ":" else { return nil }
            return (host, rest.dropFirst())
        }
        let colons = text.filter { $0 == ":" }.count
        if colons == 0 { return (text, nil) }
        // More than one colon without brackets is an unbracketed IPv6 literal: ambiguous with a port.
        guard colons == 1, let colon = text.firstIndex(of: ":") else { return nil }
        return (String(text[..<colon]), text[text.index(after: colon)...])
    }

    /// A decimal port; `allowZero` permits 0 (pick any free port).
    static func port(_ text: Substring, allowZero: Bool) -> UInt16? {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }),
              let value = UInt16(text), allowZero || value > 0 else { return nil }
        return value
    }
}
