import Foundation
import SidecarCrypto

extension Config {
    /// `session.*`: the cookie, how long a session lives, and the keys that seal it.
    public struct Session: Sendable, ConfigSection {
        /// `__Host-sidecar` unless set: `__Secure-sidecar` with a `domain`, `sidecar` when
        /// public_url is plain http on loopback (the schema derives it).
        public var cookieName = "__Host-sidecar"
        /// Cookie `Domain` attribute; nil = host-only cookie.
        public var domain: String?
        /// Whether cookies carry `Secure` (public_url is https or its host is loopback); no key.
        public var secure = true
        public var lifetime = TimeSpan.days(7)
        public var idleTimeout = TimeSpan.hours(24)
        /// 1h unless set, or half of `idleTimeout` when that is shorter (the schema derives it).
        public var refreshAfter = TimeSpan.hours(1)
        /// How often the Apple refresh token is used to revalidate; nil = disabled (`0`).
        public var revalidate: TimeSpan? = .hours(24)
        /// Key material, each ≥ 32 bytes; the first seals, all open.
        public var secrets: [Secret] = []
        /// Opened sessions each worker keeps, so a returning request skips the decode and
        /// AES-GCM open.
        public var cacheEntries = 8192

        public init() {}

        static let path = "session"
        static let keys: [ConfigKey<Self>] = [
            .required(\.secrets, "secrets",
                      "base64 of >= 32 bytes (`sidecar secret`); first seals, all open; the value here: in "
                          + "/etc/sidecar/sidecar.env (mode 0600); with the package, file:/etc/sidecar/cookie-secret "
                          + "(0640, group sidecar)",
                      missing: "e.g. [file:/etc/sidecar/cookie-secret], a file of mode 0640 made with `sidecar secret`, "
                          + "or [env:SIDECAR_COOKIE_SECRET]", secret),
            .value(\.cookieName, "cookie_name", "default __Host-sidecar; __Secure-sidecar when domain is set",
                   Names.cookieName),
            .optional(\.domain, "domain", "share the cookie with subdomains (default: host-only)", domain),
            .value(\.lifetime, "lifetime", "absolute", Parse.positiveDuration),
            .value(\.idleTimeout, "idle_timeout", "ends a session unused this long", Parse.positiveDuration),
            .value(\.refreshAfter, "refresh_after",
                   "re-seal with a new idle deadline after this; default 1h, or half of idle_timeout when that is "
                       + "shorter (set only to go lower)", Parse.positiveDuration),
            .value(\.revalidate, "revalidate",
                   "confirm with Apple's refresh token at most this often (a revoked app ends the session); 0 disables") {
                Parse.duration($0).map { $0.isZero ? nil : $0 }
            },
            .value(\.cacheEntries, "cache_entries",
                   "opened sessions each worker keeps (rounded up to a power of two, 16 to 4194304; under 1 KB each): "
                       + "see \"The session cache\"", Parse.integer(in: 16...(1 << 22))),
        ]

        /// Within public_url's host, as browsers require of a cookie's Domain.
        private static func domain(_ text: String, _ context: ParseContext) -> Result<String, ValueError> {
            var lower = text.lowercased()
            if lower.hasPrefix(".") { lower.removeFirst() }
            guard HostName.isValidDNSName(lower), !lower.hasSuffix(".") else {
                return .failure(ValueError("invalid cookie domain \(quoted(text)) (e.g. example.com)"))
            }
            if let host = context.publicURL?.host, host != lower, !host.hasSuffix("." + lower) {
                return .failure(ValueError(
                    "public_url's host \(quoted(host)) is not within \(quoted(lower)): browsers would refuse the cookie"))
            }
            return .success(lower)
        }

        /// Base64 (standard or URL-safe) of at least 32 bytes, as printed by `sidecar secret`;
        /// raw passphrases are refused because their entropy is unknown.
        private static func secret(_ text: String, _ context: ParseContext) -> Result<Secret, ValueError> {
            Secret.resolve(text, environment: context.environment, baseDirectory: context.baseDirectory).mapError { error in
                // A cookie secret is the one secret the operator makes: say how.
                text.hasPrefix("env:") && error.kind == .unresolvable
                    ? ValueError(error.message + " (make one with `sidecar secret`, then export it)", kind: .unresolvable)
                    : error
            }.flatMap { secret in
                let trimmed = secret.string.trimmingCharacters(in: .whitespaces)
                guard let decoded = Base64.decode(trimmed) else {
                    return .failure(ValueError("secret from \(secret.source) is not base64 (generate one with `sidecar secret`)"))
                }
                guard decoded.count >= 32 else {
                    return .failure(ValueError("secret from \(secret.source) decodes to \(decoded.count) bytes; at least 32 "
                        + "are needed (generate one with `sidecar secret`)"))
                }
                return .success(Secret(bytes: decoded, source: secret.source))
            }
        }
    }
}
