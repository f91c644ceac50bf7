import SidecarHTTP

// The sections whose keys are all declared (`ConfigKey`); the schema reads each with
// `Section.read(_:context:)` and adds only the rules between keys.

extension Config {
    public struct Routes: Sendable, Equatable, ConfigSection {
        /// Where the sidecar's own endpoints live, e.g. `/.auth` (no trailing slash).
        public var prefix = "/.auth"

        public init() {}

        static let path = "routes"
        static let keys: [ConfigKey<Self>] = [
            .value(\.prefix, "prefix", "where the sidecar's endpoints live: login, callback, logout, me, check",
                   Names.routePrefix),
        ]
    }

    public struct Paths: Sendable, Equatable, ConfigSection {
        /// What `%2F`, `%5C` and a raw `\` in a request path mean.
        public var encodedSlashes = EncodedSeparators.reject

        public init() {}

        static let path = "paths"
        static let keys: [ConfigKey<Self>] = [
            .value(\.encodedSlashes, "encoded_slashes",
                   "%2F, %5C or a raw \\ in a request path: reject (400, before any decision), decode (taken for /, then "
                       + "normalized and forwarded so), or keep (unsafe before an upstream that decodes them); see "
                       + "\"How paths are read\"", Parse.oneOf(EncodedSeparators.self)),
        ]
    }

    public struct Access: Sendable, Equatable, ConfigSection {
        /// Lower-cased addresses.
        public var allowedEmails: [String] = []
        /// Lower-cased domains, matched exactly against the part after the single `@`.
        public var allowedEmailDomains: [String] = []
        public var allowedSubjects: [String] = []
        public var allowPrivateRelay = true
        /// Globs (`*`, `**`), each starting with `/`.
        public var publicPaths: [String] = []
        public var apiPaths: [String] = []
        public var allowedRedirectHosts: [RedirectHost] = []

        public init() {}

        static let path = "access"
        static let keys: [ConfigKey<Self>] = [
            .list(\.allowedEmails, "allowed_emails", "addresses that may sign in, e.g. [boss@example.com]", Names.email),
            .list(\.allowedEmailDomains, "allowed_email_domains",
                  "exact domain of an address with exactly one @, e.g. [example.com]", Names.emailDomain),
            .list(\.allowedSubjects, "allowed_subjects", "Apple user ids (sub)", Parse.nonEmpty),
            .bool(\.allowPrivateRelay, "allow_private_relay", "accept @privaterelay.appleid.com addresses"),
            .list(\.publicPaths, "public_paths", "globs served without a session, e.g. [\"/healthz\", \"/static/**\"]",
                  Names.pathGlob),
            .list(\.apiPaths, "api_paths",
                  "globs answered with 401 JSON instead of a login redirect, e.g. [\"/api/**\"]", Names.pathGlob),
            .list(\.allowedRedirectHosts, "allowed_redirect_hosts",
                  "hosts besides public_url's that rd may point to: host or host:port", Names.redirectHost),
        ]
    }

    public struct Headers: Sendable, Equatable, ConfigSection {
        public var userID = "X-Auth-User-Id"
        public var email = "X-Auth-Email"
        public var emailVerified = "X-Auth-Email-Verified"
        public var privateEmail = "X-Auth-Private-Email"
        public var name = "X-Auth-Name"
        public var assertion = "X-Auth-Assertion"
        /// Sent only for sessions that carry the value (see each key's doc); `none`: never.
        public var transferSub = "X-Auth-Transfer-Sub"
        public var previousUserID = "X-Auth-Previous-User-Id"
        public var realUserStatus = "X-Auth-Real-User-Status"
        public var authTime = Headers.notSent
        public var sessionIssuedAt = Headers.notSent
        /// More header names removed from every request.
        public var strip: [String] = []
        public var passCookie = false

        public init() {}

        /// What a key set to it means: the header is not sent.
        public static let notSent = "none"

        /// Every identity header's configured name, in `identityKeys`' order; `notSent` for
        /// one that is not sent.
        public var identityHeaders: [String] {
            [userID, email, emailVerified, privateEmail, name, assertion, transferSub, previousUserID, realUserStatus,
             authTime, sessionIssuedAt]
        }

        /// The identity headers' keys, in `identityHeaders`' order.
        static let identityKeys = ["user_id", "email", "email_verified", "private_email", "name", "assertion",
                                   "transfer_sub", "previous_user_id", "real_user_status", "auth_time", "session_issued_at"]

        /// What is removed from every client request: each identity header's name, and for one
        /// renamed or not sent also its default name — an upstream written for the defaults
        /// must never read a client's copy of one.
        public var strippedIdentityHeaders: [String] {
            var names = identityHeaders.filter { $0 != Self.notSent }
            for name in Self.defaultNames where !names.contains(where: { $0.lowercased() == name.lowercased() }) {
                names.append(name)
            }
            return names
        }

        private static let defaultNames = [
            "X-Auth-User-Id", "X-Auth-Email", "X-Auth-Email-Verified", "X-Auth-Private-Email", "X-Auth-Name",
            "X-Auth-Assertion", "X-Auth-Transfer-Sub", "X-Auth-Previous-User-Id", "X-Auth-Real-User-Status",
            "X-Auth-Auth-Time", "X-Auth-Session-Issued-At",
        ]

        static let path = "headers"
        static let keys: [ConfigKey<Self>] = [
            .value(\.userID, "user_id", "Apple's stable user id (sub)", optionalHeader),
            .value(\.email, "email", "the email from Apple's id_token; absent if the user shared none", optionalHeader),
            .value(\.emailVerified, "email_verified", "true or false", optionalHeader),
            .value(\.privateEmail, "private_email", "true for a private relay address, else false", optionalHeader),
            .value(\.name, "name", "the user's name, percent-encoded UTF-8; absent when unknown", optionalHeader),
            .value(\.assertion, "assertion", "the signed identity, with assertion.enabled", identityHeader),
            .value(\.transferSub, "transfer_sub",
                   "the user's transfer identifier (the id_token's transfer_sub, listed beside the old sub by sidecar "
                       + "transfer export), sent for 60 days after an app transfer", optionalHeader),
            .value(\.previousUserID, "previous_user_id",
                   "the app's previous user id for this sub, from apple.transfer.mapping_file", optionalHeader),
            .value(\.realUserStatus, "real_user_status",
                   "0 unsupported, 1 unknown, 2 likely real: Apple sends it at a native app's first sign-in only, "
                       + "so only such sessions carry it", optionalHeader),
            .value(\.authTime, "auth_time",
                   "when the user authenticated with Apple (Unix seconds, the id_token's auth_time), e.g. "
                       + "X-Auth-Auth-Time", optionalHeader),
            .value(\.sessionIssuedAt, "session_issued_at",
                   "when the session began (Unix seconds; its age is now minus this), e.g. X-Auth-Session-Issued-At",
                   optionalHeader),
            .list(\.strip, "strip", "more headers to remove from every request", strippable),
            .bool(\.passCookie, "pass_cookie", "forward the session cookie upstream"),
        ]

        /// Headers the sidecar sets or relies on itself: an identity header may not reuse them.
        private static let managedHeaders: Set<String> = [
            "host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer",
            "cookie", "set-cookie", "authorization", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host",
            "x-request-id",
        ]

        private static func identityHeader(_ text: String) -> Result<String, ValueError> {
            guard text.lowercased() != notSent else {
                return .failure(ValueError("the assertion cannot be none: assertion.enabled decides whether it is sent"))
            }
            return Names.headerName(text).flatMap { name in
                managedHeaders.contains(name.lowercased())
                    ? .failure(ValueError("\(quoted(name)) is managed by the sidecar and cannot carry identity"))
                    : .success(name)
            }
        }

        /// A header the operator may also turn off: a name, or `none`.
        private static func optionalHeader(_ text: String) -> Result<String, ValueError> {
            text == notSent ? .success(text) : identityHeader(text)
        }

        private static func strippable(_ text: String) -> Result<String, ValueError> {
            Names.headerName(text).flatMap { name in
                ["host", "content-length", "transfer-encoding"].contains(name.lowercased())
                    ? .failure(ValueError("\(quoted(name)) frames the request and cannot be stripped"))
                    : .success(name)
            }
        }
    }

    public struct Notifications: Sendable, Equatable, ConfigSection {
        /// Where verified Apple account events are POSTed; nil = not forwarded.
        public var forwardTo: HTTPURL?

        public init() {}

        static let path = "notifications"
        static let keys: [ConfigKey<Self>] = [
            .optional(\.forwardTo, "forward_to", "POST verified Apple account events here (retried until 2xx)") { text, _ in
                HTTPURL.parse(text, allowPath: true, allowQuery: true)
            },
        ]
    }

    public struct Admin: Sendable, Equatable, ConfigSection {
        public var listen = ListenAddress.tcp(host: "127.0.0.1", port: 9090)
        /// The bearer token the `/users/…` endpoints require; nil: they answer only on a
        /// loopback or unix-socket listener, without one.
        public var token: Secret?

        public init() {}

        /// The token by where it comes from, not by value (`Secret` is not Equatable).
        public static func == (a: Admin, b: Admin) -> Bool {
            a.listen == b.listen && a.token?.source == b.token?.source
        }

        static let path = "admin"
        static let keys: [ConfigKey<Self>] = [
            .value(\.listen, "listen", "/healthz, /readyz, /metrics, and /users/… (sign a user out everywhere)") {
                text, context in
                ListenAddress.parse(text, baseDirectory: context.baseDirectory)
            },
            .optional(\.token, "token",
                      "bearer token (env: or file:, 32+ visible characters) the /users/… endpoints and the `sidecar "
                          + "users` commands require; unset, they answer only on a loopback or unix: listener",
                      token),
        ]

        private static func token(_ text: String, _ context: ParseContext) -> Result<Secret, ValueError> {
            Secret.resolve(text, environment: context.environment, baseDirectory: context.baseDirectory).flatMap { secret in
                secret.bytes.count >= 32 && secret.bytes.count <= 512 && secret.bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
                    ? .success(secret)
                    : .failure(ValueError("token from \(secret.source) must be 32 to 512 visible ASCII characters "
                        + "(sidecar secret makes one)"))
            }
        }
    }

    public struct Log: Sendable, Equatable, ConfigSection {
        public var format = LogFormat.json
        public var level = LogLevel.info
        public var access = true
        /// Log emails only when true.
        public var pii = false
        /// Query parameters whose values access lines mask, beside the built-in credentials.
        public var redactQuery: [String] = []

        public init() {}

        static let path = "log"
        static let keys: [ConfigKey<Self>] = [
            .value(\.format, "format", "json or text", Parse.oneOf(LogFormat.self)),
            .value(\.level, "level", "trace, debug, info, notice, warning, error, critical", Parse.oneOf(LogLevel.self)),
            .bool(\.access, "access", "one line per request"),
            .bool(\.pii, "pii", "log emails only when true"),
            .list(\.redactQuery, "redact_query",
                  "more query parameters whose values access lines write as ***, beside the built-in credentials "
                      + "(code, state, token, api_key, key, sig, jwt, auth, password, secret, X-Amz-Signature, …); "
                      + "matched as decoded, any case, letters and digits only (api_key = API-Key), [] ignored",
                  Names.queryParameter),
        ]
    }

    /// The pages people see. The templates are read and checked by the proxy's page
    /// renderer (at start and on SIGHUP); here only the directory is.
    public struct Pages: Sendable, Equatable, ConfigSection {
        /// Browser navigations without a session get the sign-in page instead of the redirect.
        public var signIn = false
        /// The operator's page templates; nil: the built-in pages.
        public var templates: String?
        /// The pages' language when the browser's `Accept-Language` names none they are written in.
        public var language = PageLanguage.english
        /// Every page in this language, whatever the browser asks; nil: follow `Accept-Language`.
        public var languageOverride: PageLanguage?

        public init() {}

        static let path = "pages"
        static let keys: [ConfigKey<Self>] = [
            .bool(\.signIn, "sign_in",
                  "true: a browser without a session gets a page with Apple's \"Sign in with Apple\" button (401) "
                      + "instead of the redirect to Apple"),
            .optional(\.templates, "templates",
                      "your own sign_in.html, signed_out.html, unauthorized.html (401), forbidden.html (403 policy "
                          + "denied), error.html (every other error): placeholders {{status}} {{title}} {{message}} "
                          + "{{reason}} {{request_id}} {{login_url}} {{user_name}} {{language}} {{direction}} "
                          + "{{sign_in_with_apple}}, HTML-escaped; read at start and on SIGHUP; a missing file keeps "
                          + "the built-in page") { text, context in
                Parse.directory(baseDirectory: context.baseDirectory)(text)
            },
            .value(\.language, "language",
                   "the pages' language when the browser's Accept-Language names none they are written in ("
                       + PageLanguage.allCases.map(\.tag).joined(separator: ", ") + ")",
                   Parse.oneOf(PageLanguage.self)),
            .optional(\.languageOverride, "language_override",
                      "every page in this language (one of pages.language's), whatever the browser asks; unset: "
                          + "follow Accept-Language") { text, _ in Parse.oneOf(PageLanguage.self)(text) },
        ]
    }

    /// W3C trace context, always propagated: which requests may continue a client's trace,
    /// and where spans go.
    public struct Tracing: Sendable, Equatable, ConfigSection {
        /// Continue any client's `traceparent`; false: only a trusted proxy's (`trustedProxies`).
        public var trustIncoming = true
        /// The OTLP/HTTP collector spans are posted to (its path `/v1/traces` when the URL
        /// names none); nil: no spans are recorded.
        public var otlpEndpoint: HTTPURL?
        /// Extra trust anchors for an `https` collector (a private CA), beside the system's.
        public var otlpCAFile: String?
        /// The share of new traces sampled (0…1); a continued trace keeps its parent's choice,
        /// within `maxIncomingSampledPerSecond`.
        public var sampleRatio = 1.0
        /// Continued traces whose sampled flag is honoured per second (all workers together);
        /// the rest go on unsampled.
        public var maxIncomingSampledPerSecond = 100

        public init() {}

        /// The collector's path when `otlp_endpoint` names none (OTLP/HTTP's traces path).
        static let otlpTracesPath = "/v1/traces"

        static let path = "tracing"
        static let keys: [ConfigKey<Self>] = [
            .bool(\.trustIncoming, "trust_incoming",
                  "continue a client's traceparent; false: only a trusted_proxies peer's"),
            .optional(\.otlpEndpoint, "otlp_endpoint",
                      "an OTLP/HTTP collector, http or https (path /v1/traces unless given): spans of sampled "
                          + "requests, posted in batches off the request path") { text, _ in Parse.otlpEndpoint(text) },
            .optional(\.otlpCAFile, "otlp_ca_file",
                      "extra trust anchors for an https otlp_endpoint (relative to this file)") { text, context in
                Parse.readableFile(baseDirectory: context.baseDirectory)(text)
            },
            .value(\.sampleRatio, "sample_ratio",
                   "share of new traces sampled, 0.0–1.0 (a continued trace keeps its flag, within "
                       + "max_incoming_sampled_per_second)", Parse.ratio),
            .value(\.maxIncomingSampledPerSecond, "max_incoming_sampled_per_second",
                   "continued traces whose sampled flag is honoured, per second, all workers together; beyond it they "
                       + "go on unsampled (00 upstream, no span exported). 0: a client's flag is never honoured",
                   Parse.integer(in: 0...1_000_000)),
        ]
    }
}
