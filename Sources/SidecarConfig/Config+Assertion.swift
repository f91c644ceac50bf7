extension Config {
    /// `assertion.*`: the signed identity (an ES256 JWT) sent upstream in `headers.assertion`.
    public struct Assertion: Sendable, Equatable, ConfigSection {
        public var enabled = false
        /// P-256 key; nil = generate one at start (kept in memory for the process).
        public var privateKeyFile: String?
        /// The key read from `privateKeyFile` (checked to be P-256); nil when no file is set or
        /// it does not exist yet (then `run` generates the key and writes it there).
        public var privateKey: Secret?
        /// The JWT `aud`: public_url's origin unless set (the schema derives it).
        public var audience = ""
        public var ttl = TimeSpan.seconds(60)

        public init() {}

        /// The key compares by where it came from, never by its bytes (Secret is not Equatable
        /// on purpose): two configurations naming the same file are the same setting.
        public static func == (a: Assertion, b: Assertion) -> Bool {
            a.enabled == b.enabled && a.privateKeyFile == b.privateKeyFile && a.privateKey?.source == b.privateKey?.source
                && a.audience == b.audience && a.ttl == b.ttl
        }

        /// `private_key_file` as read: the path, and the key in it when the file exists.
        struct KeyFile: Sendable, CustomStringConvertible {
            var path: String
            var key: Secret?

            var description: String { path }
        }

        /// Where `private_key_file` lands: both fields it fills, set at once.
        var keyFile: KeyFile? {
            get { privateKeyFile.map { KeyFile(path: $0, key: privateKey) } }
            set {
                privateKeyFile = newValue?.path
                privateKey = newValue?.key
            }
        }

        static let path = "assertion"
        static let keys: [ConfigKey<Self>] = [
            .bool(\.enabled, "enabled", "true: requests with a session carry the assertion upstream"),
            .optional(\.keyFile, "private_key_file",
                      "P-256 PEM; written (0600) at start if the file is absent; (none set: a key per process, lost on "
                          + "restart; warned)", keyFile),
            .value(\.audience, "audience", "the JWT aud; default: public_url", Parse.nonEmpty),
            .value(\.ttl, "ttl", "an assertion's lifetime; signed once per session per ttl, renewed after 3/4 of it",
                   Parse.positiveDuration),
        ]

        /// Generated at start (and written there) when the file does not exist yet; an existing
        /// one must be a P-256 key, checked here so `check` names its line.
        private static func keyFile(_ text: String, _ context: ParseContext) -> Result<KeyFile, ValueError> {
            Parse.path(baseDirectory: context.baseDirectory)(text).flatMap { path in
                guard FilePath.exists(path) else {
                    return FilePath.exists(FilePath.directory(of: path)) ? .success(KeyFile(path: path))
                        : .failure(ValueError("directory of \(quoted(path)) does not exist", kind: .unresolvable))
                }
                return FilePath.contents(path, limit: 64 * 1024)
                    .map { Secret(bytes: $0, source: "file:\(path)") }
                    .flatMap { AppleSigningKey.check($0, named: text, for: .assertion) }
                    .map { KeyFile(path: path, key: $0) }
            }
        }
    }
}
