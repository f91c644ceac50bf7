/// Why a sealed value was not accepted. Every case means "no session"; `reason` is a stable
/// snake_case code for logs and metrics.
public enum SealedOpenError: Error, Equatable, Sendable {
    /// Not canonical base64url or too short for an envelope.
    case malformed
    /// An envelope format this version does not read.
    case unsupportedVersion
    /// Sealed under a secret that is not configured (any more).
    case unknownKey
    /// Tampered, truncated, sealed for another cookie name or another payload kind.
    case authenticationFailed
    /// Authentic but undecodable (should not happen unless the format changed incompatibly).
    case invalidPayload
    /// Past its absolute expiry.
    case expired
    /// Past its idle deadline.
    case idleExpired

    public var reason: String {
        switch self {
        case .malformed: "malformed"
        case .unsupportedVersion: "unsupported_version"
        case .unknownKey: "unknown_key"
        case .authenticationFailed: "authentication_failed"
        case .invalidPayload: "invalid_payload"
        case .expired: "expired"
        case .idleExpired: "idle_expired"
        }
    }
}
