import SidecarApple
import SidecarCrypto

/// Why a sign-in did not complete: a stable `reason` for the log line (never a secret), the
/// status of the answer (400/401/403 for what the request got wrong, 502 when
/// Apple failed or could not be reached, 504 when it timed out); what its page says is
/// `pageTexts`, beside the pages.
struct LoginFailure: Error {
    let reason: String
    let status: Int

    init(_ reason: String, _ status: Int) {
        self.reason = reason
        self.status = status
    }

    // The request itself.
    static let formInvalid = LoginFailure("form_invalid", 400)
    static let stateMissing = LoginFailure("state_missing", 400)
    static let stateMismatch = LoginFailure("state_mismatch", 400)
    static let stateExpired = LoginFailure("state_expired", 400)
    static let stateInvalid = LoginFailure("state_invalid", 400)
    static let stateReplayed = LoginFailure("state_replayed", 400)
    static let codeMissing = LoginFailure("code_missing", 400)
    static let appleCancelled = LoginFailure("apple_cancelled", 401)
    static let appleRefused = LoginFailure("apple_error", 400)

    // Apple's answers.
    static let noIDToken = LoginFailure("no_id_token", 502)
    static let keysUnavailable = LoginFailure("jwks_unavailable", 502)
    static let subjectMismatch = LoginFailure("callback_token_sub_mismatch", 401)
    static let sessionTooLarge = LoginFailure("session_too_large", 500)
    static let internalError = LoginFailure("internal_error", 500)
    /// The store could not tell whether a single-use value was spent (Redis unreachable, a
    /// failed disk write): refused rather than risk a replay; the user may retry.
    static let storeUnavailable = LoginFailure("store_unavailable", 503)

    static func policyDenied(_ denial: AccessRules.Denial) -> LoginFailure {
        LoginFailure("policy_denied_\(denial.rawValue)", 403)
    }

    /// The token response's id_token failed verification.
    static func token(_ error: JWTError) -> LoginFailure { LoginFailure("token_\(error.reason)", 401) }

    /// The callback's own id_token (response_type `code id_token`) failed verification.
    static func callbackToken(_ error: JWTError) -> LoginFailure {
        LoginFailure("callback_token_\(error.reason)", 401)
    }

    /// The code exchange failed.
    static func exchange(_ error: AppleError) -> LoginFailure {
        switch error {
        case .rejected(let code, _, _):
            let name = code.code.filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }.prefix(40)
            return LoginFailure("exchange_\(name.isEmpty ? "rejected" : String(name))", 502)
        case .appleServerError:
            return LoginFailure("apple_server_error", 502)
        case .invalidResponse:
            return LoginFailure("apple_invalid_response", 502)
        case .transport(.timeout):
            return LoginFailure("apple_timeout", 504)
        case .transport(.tlsHandshakeFailed):
            return LoginFailure("apple_tls_failed", 502)
        case .transport:
            return LoginFailure("apple_unreachable", 502)
        }
    }

    /// The short code API clients get (`{"error": …}`).
    var publicCode: String {
        switch status {
        case 401: "unauthenticated"
        case 403: "forbidden"
        case 502, 504: "apple_unavailable"
        case 500: "internal_error"
        default: "bad_request"
        }
    }
}
