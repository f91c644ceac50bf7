import SidecarCrypto

// Every label value `/metrics` can show comes from one of these fixed sets, so neither
// user input nor a remote party (Apple's error codes) can grow the exposition.

/// `sidecar_logins_total{outcome}`: "ok" or the callback's stable reason code
/// (`LoginFailure.reason`); a code outside the set counts as "other".
enum LoginOutcome {
    static let ok = 0

    static let labels: [String] = {
        var labels = [
            "ok", "form_invalid", "state_missing", "state_mismatch", "state_expired", "state_invalid",
            "state_replayed", "code_missing", "apple_cancelled", "apple_error", "no_id_token", "jwks_unavailable",
            "callback_token_sub_mismatch", "session_too_large", "internal_error", "random_failed",
            "state_seal_failed",
        ]
        labels += ["private_relay", "subject", "email"].map { "policy_denied_" + $0 }
        labels += exchangeReasons
        labels += tokenReasons.map { "token_" + $0 } + tokenReasons.map { "callback_token_" + $0 }
        return labels + ["other"]
    }()

    /// `JWTError.reason` values: the suffixes of the `token_…` reasons.
    static let tokenReasons = [
        "too_large", "malformed", "algorithm_not_allowed", "crit_header", "missing_kid", "unknown_key",
        "key_type_mismatch", "bad_signature", "expired", "not_yet_valid", "issued_in_future", "wrong_issuer",
        "wrong_audience", "nonce_missing", "nonce_mismatch", "missing_claim", "invalid_claim",
    ]

    /// Apple's answers to a code exchange (`LoginFailure.exchange`).
    static let exchangeReasons = [
        "apple_server_error", "apple_invalid_response", "apple_timeout", "apple_tls_failed", "apple_unreachable",
        "exchange_rejected",
    ] + ["invalid_grant", "invalid_client", "invalid_request", "unauthorized_client", "unsupported_grant_type",
         "invalid_scope"].map { "exchange_" + $0 }

    static let other = labels.count - 1
    private static let indexByLabel = Dictionary(uniqueKeysWithValues: labels.enumerated().map { ($1, $0) })

    /// The counter index for a reason code (off the request path: a login's last step).
    static func index(of reason: String) -> Int { indexByLabel[reason] ?? other }
}

/// `sidecar_native_signins_total{outcome}`: "ok" or the reason code of a failed
/// `POST {prefix}/native` (`LoginFailure.reason`); a code outside the set counts as "other".
enum NativeOutcome {
    static let ok = 0

    static let labels: [String] = {
        var labels = [
            "ok", "body_invalid", "identity_token_missing", "nonce_required", "nonce_invalid", "nonce_hashed", "nonce_expired",
            "nonce_replayed", "no_id_token", "jwks_unavailable", "code_sub_mismatch", "session_too_large",
            "internal_error", "android_nonce_required", "relay_package_not_listed",
        ]
        labels += ["private_relay", "subject", "email"].map { "policy_denied_" + $0 }
        labels += LoginOutcome.exchangeReasons
        labels += LoginOutcome.tokenReasons.map { "token_" + $0 } + LoginOutcome.tokenReasons.map { "code_token_" + $0 }
        return labels + ["other"]
    }()

    static let other = labels.count - 1
    private static let indexByLabel = Dictionary(uniqueKeysWithValues: labels.enumerated().map { ($1, $0) })

    static func index(of reason: String) -> Int { indexByLabel[reason] ?? other }
}

/// `sidecar_native_refreshes_total{outcome}`: "ok", "bearer_missing" (no bearer token the
/// sidecar could open was sent), or why the bearer session was refused.
enum NativeRefreshOutcome {
    /// Indexed by `index(of:)`: the session outcomes in their order, then "bearer_missing".
    static let labels = SessionOutcome.allCases.map { $0 == .accepted ? "ok" : $0.reason } + ["bearer_missing"]

    /// nil: no bearer session token at all.
    static func index(of outcome: SessionOutcome?) -> Int { outcome?.rawValue ?? labels.count - 1 }
}

/// How the session arrived: `sidecar_sessions_total{via}`.
enum SessionCarrier: Int, CaseIterable {
    case cookie = 0, bearer

    var label: String { self == .cookie ? "cookie" : "bearer" }
}

/// `sidecar_sessions_total{result,reason}`: accepted, or why the sealed value was refused
/// (SealedOpenError's reason codes, plus "revoked").
enum SessionOutcome: Int, CaseIterable {
    case accepted = 0, malformed, unsupportedVersion, unknownKey, authenticationFailed, invalidPayload, expired,
         idleExpired, revoked

    /// Refused although it was sealed by this sidecar: the token is its own (to strip), not
    /// an upstream's credential that happens to use the Bearer scheme.
    var isOwnToken: Bool {
        switch self {
        case .accepted, .expired, .idleExpired, .revoked, .invalidPayload: true
        case .malformed, .unsupportedVersion, .unknownKey, .authenticationFailed: false
        }
    }

    init(_ error: SealedOpenError) {
        switch error {
        case .malformed: self = .malformed
        case .unsupportedVersion: self = .unsupportedVersion
        case .unknownKey: self = .unknownKey
        case .authenticationFailed: self = .authenticationFailed
        case .invalidPayload: self = .invalidPayload
        case .expired: self = .expired
        case .idleExpired: self = .idleExpired
        }
    }

    var result: String { self == .accepted ? "accepted" : "rejected" }

    /// The access line's `reason` for a request whose session credential was refused:
    /// `session_` and the reason `sidecar_sessions_total` counts it under.
    var accessReason: StaticString {
        switch self {
        case .accepted: "session_ok"
        case .malformed: "session_malformed"
        case .unsupportedVersion: "session_unsupported_version"
        case .unknownKey: "session_unknown_key"
        case .authenticationFailed: "session_authentication_failed"
        case .invalidPayload: "session_invalid_payload"
        case .expired: "session_expired"
        case .idleExpired: "session_idle_expired"
        case .revoked: "session_revoked"
        }
    }

    var reason: String {
        switch self {
        case .accepted: "ok"
        case .malformed: SealedOpenError.malformed.reason
        case .unsupportedVersion: SealedOpenError.unsupportedVersion.reason
        case .unknownKey: SealedOpenError.unknownKey.reason
        case .authenticationFailed: SealedOpenError.authenticationFailed.reason
        case .invalidPayload: SealedOpenError.invalidPayload.reason
        case .expired: SealedOpenError.expired.reason
        case .idleExpired: SealedOpenError.idleExpired.reason
        case .revoked: "revoked"
        }
    }
}

/// `sidecar_session_reseals_total{reason}`: a new idle deadline, or a move to the first secret.
enum ResealReason: Int, CaseIterable {
    case refresh = 0, oldSecret
    /// A `session.revalidate` check confirmed the session since the cookie was sealed.
    case revalidated

    var label: String {
        switch self {
        case .refresh: "refresh"
        case .oldSecret: "old_secret"
        case .revalidated: "revalidated"
        }
    }
}

/// `sidecar_apple_request_seconds{call}`: which Apple endpoint was called.
enum AppleCall: Int, CaseIterable {
    case token = 0, keys, revoke

    var label: String {
        switch self {
        case .token: "token"
        case .keys: "keys"
        case .revoke: "revoke"
        }
    }
}

/// Why an exchange ended before its response was complete: the access log's `error` and
/// `sidecar_responses_incomplete_total{reason}`. The status logged with it is what the
/// client was sent (or 499/502 when nothing was), so a cut-off 200 never reads as a success.
enum IncompleteReason: Int, CaseIterable {
    /// The upstream sent nothing for `upstream_timeout` while the sidecar waited for it.
    case upstreamTimeout = 0
    /// The upstream closed or reset before the end of its response body.
    case upstreamClosed
    /// The upstream's body broke its own framing (bad chunk, more than Content-Length).
    case upstreamInvalidBody
    /// The upstream's response head could not be forwarded.
    case upstreamInvalidHead
    /// The client read nothing for `limits.idle_timeout` while a response waited for it.
    case clientSendTimeout
    /// The client closed or reset the connection before the response was complete.
    case clientClosed
    /// The client's request body broke its framing or limit after the response had started.
    case requestBodyInvalid
    /// The request body arrived slower than `limits.min_body_rate` (answered 408 if it could be).
    case requestBodyTooSlow

    var label: String {
        switch self {
        case .upstreamTimeout: "upstream_timeout"
        case .upstreamClosed: "upstream_closed"
        case .upstreamInvalidBody: "upstream_invalid_body"
        case .upstreamInvalidHead: "upstream_invalid_head"
        case .clientSendTimeout: "client_send_timeout"
        case .clientClosed: "client_closed"
        case .requestBodyInvalid: "request_body_invalid"
        case .requestBodyTooSlow: "request_body_too_slow"
        }
    }
}

/// Why a connection was closed before its PROXY protocol header was read (`proxy_protocol`):
/// `sidecar_proxy_protocol_refusals_total{reason}`.
enum ProxyHeaderRefusal: Int, CaseIterable {
    /// The TCP peer is not in `trusted_proxies`: closed at accept, before reading anything.
    case untrustedPeer = 0
    /// The first bytes are not a well-formed PROXY v1 or v2 header (or one too long).
    case invalid
    /// The header was not complete within `limits.header_timeout` of the accept.
    case timeout
    /// The peer closed or reset the connection before the header was complete.
    case closed

    var label: String {
        switch self {
        case .untrustedPeer: "untrusted_peer"
        case .invalid: "invalid"
        case .timeout: "timeout"
        case .closed: "closed"
        }
    }
}
