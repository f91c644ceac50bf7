import SidecarHTTPClient

/// An absolute URL the CA gave (directory, order, authorization, certificate): https only,
/// except plain http to loopback (a test CA), no userinfo, no fragment. Split into the origin
/// the HTTP client connects to and the target it asks for.
public struct ACMEURL: Sendable, Hashable, CustomStringConvertible {
    public let text: String
    /// `scheme://host[:port]`.
    public let origin: String
    /// Path and query, at least `/`.
    public let target: String

    public init?(_ text: String) {
        guard text.utf8.count <= 2048, !text.contains("#"), !text.contains("@") else { return nil }
        let lower = text.lowercased()
        let schemeLength: Int
        if lower.hasPrefix("https://") { schemeLength = 8 } else if lower.hasPrefix("http://") { schemeLength = 7 } else {
            return nil
        }
        let rest = text.dropFirst(schemeLength)
        let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<end]
        guard !authority.isEmpty else { return nil }
        let origin = String(text.prefix(schemeLength)) + authority
        // The same rules as the Apple client's base URL: https, or http to loopback only.
        guard (try? AppleEndpoint(baseURL: origin)) != nil else { return nil }
        var target = String(rest[end...])
        if target.isEmpty || target.hasPrefix("?") { target = "/" + target }
        self.text = text
        self.origin = origin
        self.target = target
    }

    public var description: String { text }
}
