/// A user's latest Apple refresh token, kept (`users.keep_refresh_tokens`) so that an
/// operator can revoke it at Apple when signing the user out everywhere. The store holds it
/// only sealed with the session keys (`sealed`, base64url text): a copy of the store alone
/// reveals no token.
public struct KeptRefreshToken: Sendable, Equatable, DatedPerUser {
    /// When the sign-in that obtained it happened (Unix milliseconds): a later one replaces it.
    public var atMs: Int64
    public var sealed: String

    public init(atMs: Int64, sealed: String) {
        self.atMs = atMs
        self.sealed = sealed
    }

    /// A sealed token of a client id and a token of Apple's sizes fits with room to spare.
    public static let maximumSealedBytes = 4096
    /// Kept as long as a sign-in is: a user gone longer has it forgotten.
    public static let retentionSeconds = SignInRecord.retentionSeconds
}

/// A token a store can keep: a subject within the codec's bounds, a sealed text of a size
/// the codec carries.
func checkKept(_ subject: String, _ token: KeptRefreshToken) throws(StoreError) {
    try checkSubject(subject)
    guard !token.sealed.isEmpty, token.sealed.utf8.count <= KeptRefreshToken.maximumSealedBytes,
          token.sealed.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
        throw .invalidArgument("sealed refresh token empty, over \(KeptRefreshToken.maximumSealedBytes) bytes or not base64url")
    }
}
