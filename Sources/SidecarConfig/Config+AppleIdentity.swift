extension Config {
    /// `apple`'s identity keys: the team, the Services IDs, and the key that signs client
    /// secrets, given as a file or as the key itself (exactly one: the schema reads only the one
    /// set). The schema makes `Config.Apple` of them with `AppleOptions`.
    struct AppleIdentity: Sendable, ConfigSection {
        var teamID: String?
        /// `client_id`, one or a list; the first is the web flow's.
        var clientIDs: [String] = []
        var keyID: String?
        /// `private_key_file`'s key, its source `file:` and the path it was read from.
        var privateKeyFile: Secret?
        var privateKey: Secret?

        init() {}

        /// Where `private_key_file`'s key was read from.
        var privateKeyPath: String? { privateKeyFile.map { String($0.source.dropFirst(Self.fileSource.count)) } }

        private static let fileSource = "file:"

        static let path = "apple"
        static let keys: [ConfigKey<Self>] = [
            .required(\.teamID, "team_id", "your Apple Developer Team ID (10 characters)") { text, _ in
                Placeholders.teamID(text)
            },
            .oneOrMore(\.clientIDs, "client_id",
                       "the Services ID (web flow audience); a list names several: the web flow asks for the "
                           + "first, notifications and the Android relay may name any") {
                Names.bundleID($0, what: "client id (Services ID)")
            },
            .required(\.keyID, "key_id", "the Sign in with Apple key's ID (10 characters)") { text, _ in
                Placeholders.keyID(text)
            },
            .optional(\.privateKeyFile, "private_key_file", "the .p8 from Apple; relative to this file",
                               keyFile).requiredWithAlternative,
            .optional(\.privateKey, "private_key",
                               "instead of private_key_file, the key itself: env:NAME, file:/path or the PEM text",
                               key).requiredWithAlternative,
        ]

        private static func keyFile(_ text: String, _ context: ParseContext) -> Result<Secret, ValueError> {
            Parse.path(baseDirectory: context.baseDirectory)(text).flatMap(Placeholders.appleKey).flatMap { resolved in
                FilePath.contents(resolved, limit: 64 * 1024)
                    .map { Secret(bytes: $0, source: fileSource + resolved) }
                    .flatMap { AppleSigningKey.check($0, named: text) }
            }
        }

        private static func key(_ text: String, _ context: ParseContext) -> Result<Secret, ValueError> {
            Placeholders.appleKey(text).flatMap {
                Secret.resolve($0, environment: context.environment, baseDirectory: context.baseDirectory)
            }.flatMap { key in
                AppleSigningKey.check(key, named: key.source == "inline" ? "the inline key" : key.source)
            }
        }
    }
}
