/// A user's last sign-in: when, and on what (`web`, or `native:<bundle id>` for an app).
public struct SignInRecord: Sendable, Equatable, DatedPerUser {
    /// Unix milliseconds.
    public var atMs: Int64
    public var platform: String

    public init(atMs: Int64, platform: String) {
        self.atMs = atMs
        self.platform = platform
    }

    static let maximumPlatformBytes = 255
    /// How long a sign-in is remembered: a user gone longer is no longer "last seen" news.
    public static let retentionSeconds: Int64 = 400 * 86_400
}
