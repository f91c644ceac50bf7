import Glibc
import SidecarCrypto

/// A person who can sign in at the emulator.
public struct TestUser: Sendable, Equatable {
    public var email: String
    public var firstName: String?
    public var lastName: String?
    /// Chooses "Hide My Email": the relying party gets a `…@privaterelay.appleid.com` address.
    public var hideMyEmail: Bool

    public init(email: String, firstName: String? = nil, lastName: String? = nil, hideMyEmail: Bool = false) {
        self.email = email
        self.firstName = firstName
        self.lastName = lastName
        self.hideMyEmail = hideMyEmail
    }

    /// Exactly one `@` with text on both sides, no whitespace or control characters, ≤ 254 bytes.
    public static func isPlausibleEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        return text.utf8.count <= 254 && parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty
            && !text.unicodeScalars.contains { $0.properties.isWhitespace || $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
    }
}

/// A relying party registered at the emulator: a Services ID with its web redirect URLs, or
/// a bundle id (no redirect URLs: native flow only, `redirect_uri` omitted at the token endpoint).
public struct EmulatorClient: Sendable, Equatable {
    public var id: String
    public var redirectURIs: [String]

    public init(id: String, redirectURIs: [String]) {
        self.id = id
        self.redirectURIs = redirectURIs
    }

    /// Parses `ID=URI[,URI…]` or a bare `ID` (the `--client` option).
    public init(parsing text: String) throws(EmulatorConfigurationError) {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let id = String(parts[0])
        guard !id.isEmpty, !id.contains(where: { $0 == "," || $0 == " " }) else { throw .invalidClient(text) }
        var uris: [String] = []
        if parts.count == 2 {
            for uri in parts[1].split(separator: ",", omittingEmptySubsequences: false) {
                guard RedirectURIRule.isAcceptable(String(uri)) else { throw .invalidRedirectURI(String(uri)) }
                uris.append(String(uri))
            }
        }
        self.init(id: id, redirectURIs: uris)
    }
}

public enum EmulatorConfigurationError: Error, Equatable, CustomStringConvertible {
    case invalidClient(String)
    case invalidRedirectURI(String)
    case invalidClientKey(String)
    case invalidIssuer(String)
    case keys(String)
    case usersFile(String)

    public var description: String {
        switch self {
        case .invalidClient(let text): "invalid client \"\(text)\": expected ID=REDIRECT_URI[,REDIRECT_URI…] or ID"
        case .invalidRedirectURI(let uri):
            "invalid redirect URI \"\(uri)\": must be https (or http on a loopback host), without fragment"
        case .invalidClientKey(let text): "invalid client key: \(text)"
        case .invalidIssuer(let text): "invalid issuer \"\(text)\": expected an http(s) URL without trailing slash"
        case .keys(let text): "signing keys: \(text)"
        case .usersFile(let text): "users file: \(text)"
        }
    }
}

/// Everything the emulator is configured with.
public struct EmulatorOptions: Sendable {
    /// The emulator's base URL: the `iss` of its tokens and the `aud` client secrets must carry.
    public var issuer: String
    public var teamID: String
    public var clients: [EmulatorClient]
    /// Client-secret verification keys by key id (the public halves of `.p8` keys).
    public var clientKeys: [String: P256PublicKey]
    /// Approve every authorization as this user without showing the page.
    public var autoApprove: TestUser?
    /// Users offered on the authorization page.
    public var users: [TestUser]
    public var idTokenLifetime: Int64 = 86_400
    public var codeLifetime: Int64 = 300
    public var accessTokenLifetime: Int64 = 3_600
    /// Clock skew allowed for a client secret's `iat`.
    public var clientSecretLeeway: Int64 = 60
    /// Where signing keys are kept (`<kid>.pem`), so several runs share them; nil: in memory.
    public var keyDirectory: String?
    /// `POST /emulator/notify` may post to any host, not only loopback ones. Off, the
    /// unauthenticated control API cannot be used to send requests into other networks.
    public var allowNotifyToAnyHost = false
    /// Current Unix time in seconds (tests inject their own).
    public var clock: @Sendable () -> Int64

    public init(issuer: String, teamID: String, clients: [EmulatorClient], clientKeys: [String: P256PublicKey],
                autoApprove: TestUser? = nil, users: [TestUser] = EmulatorOptions.defaultUsers,
                keyDirectory: String? = nil, clock: @escaping @Sendable () -> Int64 = EmulatorOptions.systemClock) {
        self.issuer = issuer
        self.teamID = teamID
        self.clients = clients
        self.clientKeys = clientKeys
        self.autoApprove = autoApprove
        self.users = users
        self.keyDirectory = keyDirectory
        self.clock = clock
    }

    public static let defaultUsers = [
        TestUser(email: "maria.ruiz@example.com", firstName: "Maria", lastName: "Ruiz"),
        TestUser(email: "john.appleseed@example.com", firstName: "John", lastName: "Appleseed"),
        TestUser(email: "private.person@example.com", firstName: "Pat", lastName: "Private", hideMyEmail: true),
    ]

    /// The wall clock's second, read precisely: `time(2)` reads the kernel's coarse clock, which
    /// may still name the previous second for a tick after a second begins.
    public static let systemClock: @Sendable () -> Int64 = {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec)
    }

    func client(_ id: String) -> EmulatorClient? { clients.first { $0.id == id } }

    /// Checks what the types cannot: issuer form and every redirect URI.
    public func validate() throws(EmulatorConfigurationError) {
        guard issuer.hasPrefix("https://") || issuer.hasPrefix("http://"), !issuer.hasSuffix("/"),
              !issuer.contains(where: { $0 == "?" || $0 == "#" || $0 == " " })
        else { throw .invalidIssuer(issuer) }
        for client in clients {
            for uri in client.redirectURIs where !RedirectURIRule.isAcceptable(uri) { throw .invalidRedirectURI(uri) }
        }
    }
}

/// Apple's rule for a web `redirect_uri`: https, no fragment, no whitespace or control
/// characters; a local stand-in also accepts plain http on a loopback host.
enum RedirectURIRule {
    static func isAcceptable(_ uri: String) -> Bool {
        guard !uri.contains("#"), uri.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return false }
        let lower = uri.lowercased()
        if lower.hasPrefix("https://") { return host(of: uri, schemeLength: 8) != nil }
        if lower.hasPrefix("http://"), let host = host(of: uri, schemeLength: 7) { return isLoopback(host) }
        return false
    }

    /// The host of `scheme://host[:port]/…` (no userinfo allowed).
    private static func host(of uri: String, schemeLength: Int) -> String? {
        let rest = uri.dropFirst(schemeLength)
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            return String(authority[authority.startIndex...close])
        }
        let host = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)[0]
        return host.isEmpty ? nil : String(host)
    }

    static func isLoopback(_ host: String) -> Bool {
        let lower = host.lowercased()
        if lower == "localhost" || lower == "[::1]" { return true }
        let octets = lower.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}
