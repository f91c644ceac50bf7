extension Config {
    /// `apple.*` but the app's identity (team_id, client_id, key_id and the key, which the
    /// schema reads: required, and the key exactly one of two ways): each key declared once.
    struct AppleOptions: Sendable, ConfigSection {
        var scopes = ["name", "email"]
        var nativeAudiences: [String] = []
        var nativeRequireNonce = false
        var androidPackages: [String] = []
        var baseURL = Self.apple
        var caFile: String?
        var jwksRefresh = TimeSpan.hours(1)
        var clientSecretTTL = TimeSpan.hours(1)
        var leeway = TimeSpan.seconds(60)
        var pkce = true

        init() {}

        static let apple = HTTPURL(scheme: "https", host: "appleid.apple.com", port: 443, path: "", query: "")

        static let path = "apple"
        static let keys: [ConfigKey<Self>] = [
            .list(\.scopes, "scopes", "what the user is asked to share, once, at the first sign-in", Self.parseScope),
            .list(\.nativeAudiences, "native_audiences", "iOS/macOS bundle ids whose identity tokens /.auth/native accepts") {
                Names.bundleID($0, what: "bundle id")
            },
            .bool(\.nativeRequireNonce, "native_require_nonce", "true: native sign-ins must carry a nonce from /.auth/native/nonce"),
            .list(\.androidPackages, "android_packages",
                  "Android apps the web-flow relay /.auth/android/callback may hand results to", Names.androidPackage),
            .value(\.baseURL, "base_url", "Apple's endpoints (an emulator's for tests); https unless loopback", Self.parseBaseURL),
            .optional(\.caFile, "ca_file", "extra trust anchors for base_url") { text, context in
                Parse.readableFile(baseDirectory: context.baseDirectory)(text)
            },
            .value(\.jwksRefresh, "jwks_refresh", "Apple's signing keys are fetched again this often", Parse.positiveDuration),
            .value(\.clientSecretTTL, "client_secret_ttl", "at most 180d", Self.parseClientSecretTTL),
            .value(\.leeway, "leeway", "allowed clock skew", Self.parseLeeway),
            .bool(\.pkce, "pkce", "PKCE (S256) on the web flow, beside its state and nonce"),
        ]

        private static func parseScope(_ scope: String) -> Result<String, ValueError> {
            ["name", "email"].contains(scope) ? .success(scope)
                : .failure(ValueError("unknown scope \(quoted(scope)) (Apple offers name and email)"))
        }

        private static func parseBaseURL(_ text: String) -> Result<HTTPURL, ValueError> {
            HTTPURL.parse(text, allowPath: true, allowQuery: false).flatMap { url in
                url.isHTTPS || url.isLoopback ? .success(url)
                    : .failure(ValueError("\(quoted(text)) must be https unless its host is loopback"))
            }
        }

        private static func parseClientSecretTTL(_ text: String) -> Result<TimeSpan, ValueError> {
            Parse.positiveDuration(text).flatMap { ttl in
                ttl <= .days(180) ? .success(ttl) : .failure(ValueError("\(quoted(text)) is longer than Apple's maximum of 180d"))
            }
        }

        private static func parseLeeway(_ text: String) -> Result<TimeSpan, ValueError> {
            Parse.duration(text).flatMap { span in
                span <= .minutes(10) ? .success(span)
                    : .failure(ValueError("\(quoted(text)) is too lenient a clock skew (at most 10m)"))
            }
        }
    }
}
