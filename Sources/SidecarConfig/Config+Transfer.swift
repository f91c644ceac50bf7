extension Config {
    /// `apple.transfer`: what the sidecar forwards after the app moved to another team.
    public struct AppleTransfer: Sendable, Equatable, ConfigSection {
        /// A CSV of the app's previous user id and the user's new `sub` (the first two columns
        /// of `sidecar transfer import`'s output); nil: none.
        public var mappingFile: String?

        public init() {}

        static let path = "apple.transfer"
        static let keys: [ConfigKey<Self>] = [
            .optional(\.mappingFile, "mapping_file",
                      "CSV of old id,new sub (sidecar transfer import's output): a user signing in with a new sub gets "
                          + "headers.previous_user_id; read at start and on SIGHUP") { text, context in
                Parse.readableFile(baseDirectory: context.baseDirectory)(text)
            },
        ]
    }
}
