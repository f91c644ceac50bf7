/// Why a JWS/JWT was refused. `reason` is a stable snake_case code for logs and metrics.
public enum JWTError: Error, Equatable, Sendable {
    case tooLarge
    case malformed(String)
    case algorithmNotAllowed
    case critHeader
    case missingKeyID
    case unknownKey
    case keyTypeMismatch
    case badSignature
    case expired
    case notYetValid
    case issuedInFuture
    case wrongIssuer
    case wrongAudience
    case nonceMissing
    case nonceMismatch
    case missingClaim(String)
    case invalidClaim(String)

    public var reason: String {
        switch self {
        case .tooLarge: "too_large"
        case .malformed: "malformed"
        case .algorithmNotAllowed: "algorithm_not_allowed"
        case .critHeader: "crit_header"
        case .missingKeyID: "missing_kid"
        case .unknownKey: "unknown_key"
        case .keyTypeMismatch: "key_type_mismatch"
        case .badSignature: "bad_signature"
        case .expired: "expired"
        case .notYetValid: "not_yet_valid"
        case .issuedInFuture: "issued_in_future"
        case .wrongIssuer: "wrong_issuer"
        case .wrongAudience: "wrong_audience"
        case .nonceMissing: "nonce_missing"
        case .nonceMismatch: "nonce_mismatch"
        case .missingClaim: "missing_claim"
        case .invalidClaim: "invalid_claim"
        }
    }
}
