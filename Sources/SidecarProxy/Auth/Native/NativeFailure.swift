import SidecarApple
import SidecarCrypto

/// Why a native sign-in (`POST {prefix}/native`) did not complete. The same
/// `LoginFailure` as the web callback — a stable reason for the log line, `/metrics` and the
/// JSON answer — with the reasons only this endpoint has.
extension LoginFailure {
    /// Not a JSON object, or a field of the wrong type.
    static let bodyInvalid = LoginFailure("body_invalid", 400)
    static let identityTokenMissing = LoginFailure("identity_token_missing", 400)
    /// `apple.native_require_nonce` and the body carries no nonce.
    static let nonceRequired = LoginFailure("nonce_required", 400)
    /// The nonce is not one this sidecar sealed (forged, tampered, another deployment's).
    static let nonceInvalid = LoginFailure("nonce_invalid", 401)
    /// The body carries the SHA-256 hex of a nonce instead of the nonce as `/native/nonce`
    /// gave it (only Apple's request may take the hash): the most common mix-up, named.
    static let nonceHashed = LoginFailure("nonce_hashed", 400)
    /// Sealed by us, but older than `AuthShared.nativeNonceSeconds`.
    static let nonceExpired = LoginFailure("nonce_expired", 401)
    /// Already spent by an earlier sign-in: a replay.
    static let nonceReplayed = LoginFailure("nonce_replayed", 401)
    /// A web-flow token (`aud` = the Services ID, from the Android relay) without a nonce this
    /// sidecar sealed: it could have been captured from any web sign-in.
    static let androidNonceRequired = LoginFailure("android_nonce_required", 401)
    /// `androidPackage` in the body is not in `apple.android_packages`.
    static let androidPackageNotListed = LoginFailure(AndroidRelay.Refusal.packageNotListed.rawValue, 400)
    /// The authorization code belongs to another user than the identity token.
    static let codeSubjectMismatch = LoginFailure("code_sub_mismatch", 401)

    /// The id_token Apple returned for the authorization code failed verification.
    static func codeToken(_ error: JWTError) -> LoginFailure { LoginFailure("code_token_\(error.reason)", 401) }

    /// The app's authorization code could not be exchanged. A code Apple refuses as used or
    /// expired (`invalid_grant`) is the app's stale credential, so 401 like a bad token; the
    /// rest (our client secret refused, Apple down) stays 502/504 as on the web.
    static func nativeExchange(_ error: AppleError) -> LoginFailure {
        let failure = exchange(error)
        return failure.reason == "exchange_invalid_grant" ? LoginFailure(failure.reason, 401) : failure
    }
}
