extension Config {
    /// `users.*`: what the sidecar keeps per user for the operator's `users` commands.
    public struct Users: Sendable, Equatable, ConfigSection {
        /// Keep each user's latest Apple refresh token in the store (sealed with the session
        /// keys), so `sidecar users revoke SUB --apple` can revoke it at Apple.
        public var keepRefreshTokens = false

        public init() {}

        static let path = "users"
        static let keys: [ConfigKey<Self>] = [
            .bool(\.keepRefreshTokens, "keep_refresh_tokens",
                  "keep each user's latest Apple refresh token in the store, sealed with the session keys, so "
                      + "users revoke SUB --apple can revoke it at Apple (needs a durable revocations.store)"),
        ]
    }
}

extension ConfigSchema {
    /// `users`: keeping refresh tokens needs a store that outlives the process, or the
    /// operator's `--apple` would find nothing after a restart and say so too late.
    mutating func readUsers(_ section: Section, context: ParseContext, store: RevocationStore) -> Config.Users {
        let users = section.read(Config.Users.self, context: context)
        if users.keepRefreshTokens, store == .memory {
            reader.report(.conflict, "users.keep_refresh_tokens", at: section.location(of: "keep_refresh_tokens"),
                          "needs a durable store: set revocations.store to file:… or redis://…")
        }
        return users
    }
}
