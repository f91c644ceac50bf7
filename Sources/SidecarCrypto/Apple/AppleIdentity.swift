/// The identity carried by a verified Apple id_token.
public struct AppleIdentity: Sendable, Equatable {
    public let subject: String
    /// The audience that matched (Services ID for the web, bundle id for native apps).
    public let audience: String
    /// nil when absent or empty.
    public let email: String?
    public let emailVerified: Bool
    public let isPrivateEmail: Bool
    /// 0 unsupported, 1 unknown, 2 likely real (native first sign-in only).
    public let realUserStatus: Int?
    public let authTime: Int64?
    public let issuedAt: Int64
    public let expiresAt: Int64
    public let nonce: String?
    /// The user's transfer identifier, for 60 days after the app moved to another team: the one
    /// the sending team listed beside the user's old `sub` (`usermigrationinfo`).
    public var transferSubject: String? = nil
}

/// Which nonce an id_token must carry.
public enum NonceExpectation: Sendable, Equatable {
    /// No nonce was sent; any nonce in the token is ignored.
    case none
    /// The token's `nonce` must equal one of these (e.g. the hash sent to Apple, or the raw
    /// value and its SHA-256 hex for native apps). A missing nonce is refused, whatever
    /// `nonce_supported` says.
    case oneOf([String])
}
