/// A misbehaviour armed for the next request to `/auth/token`, so relying parties can test
/// that they refuse every kind of bad answer.
public enum EmulatorFault: Sendable, Equatable {
    // id_token attacks (the answer is otherwise a normal 200)
    case algNone, hs256WithPublicKey, unknownKid, wrongIssuer, wrongAudience, expired, issuedInFuture
    case nonceMissing, wrongNonce, tamperedPayload, truncated, extraSegment, noIDToken
    // token-endpoint behaviours
    case invalidGrant, invalidClient, invalidRequest, http500, http502HTML, malformedJSON, hang
    case slow(milliseconds: Int64)

    public init?(name: String) {
        switch name {
        case "alg_none": self = .algNone
        case "hs256_with_public_key": self = .hs256WithPublicKey
        case "unknown_kid": self = .unknownKid
        case "wrong_iss": self = .wrongIssuer
        case "wrong_aud": self = .wrongAudience
        case "expired": self = .expired
        case "iat_future": self = .issuedInFuture
        case "nonce_missing": self = .nonceMissing
        case "wrong_nonce": self = .wrongNonce
        case "tampered_payload": self = .tamperedPayload
        case "truncated": self = .truncated
        case "extra_segment": self = .extraSegment
        case "no_id_token": self = .noIDToken
        case "invalid_grant": self = .invalidGrant
        case "invalid_client": self = .invalidClient
        case "invalid_request": self = .invalidRequest
        case "http_500": self = .http500
        case "http_502_html": self = .http502HTML
        case "malformed_json": self = .malformedJSON
        case "hang": self = .hang
        default:
            guard name.hasPrefix("slow:"), let ms = Int64(name.dropFirst(5)), (0...600_000).contains(ms) else {
                return nil
            }
            self = .slow(milliseconds: ms)
        }
    }

    public var name: String {
        switch self {
        case .algNone: "alg_none"
        case .hs256WithPublicKey: "hs256_with_public_key"
        case .unknownKid: "unknown_kid"
        case .wrongIssuer: "wrong_iss"
        case .wrongAudience: "wrong_aud"
        case .expired: "expired"
        case .issuedInFuture: "iat_future"
        case .nonceMissing: "nonce_missing"
        case .wrongNonce: "wrong_nonce"
        case .tamperedPayload: "tampered_payload"
        case .truncated: "truncated"
        case .extraSegment: "extra_segment"
        case .noIDToken: "no_id_token"
        case .invalidGrant: "invalid_grant"
        case .invalidClient: "invalid_client"
        case .invalidRequest: "invalid_request"
        case .http500: "http_500"
        case .http502HTML: "http_502_html"
        case .malformedJSON: "malformed_json"
        case .hang: "hang"
        case .slow(let ms): "slow:\(ms)"
        }
    }

    /// Whether the fault spoils the id_token itself (what `POST /emulator/native` can apply to
    /// the identity token it issues); the others are about the token endpoint's answer.
    public var spoilsIDToken: Bool {
        switch self {
        case .algNone, .hs256WithPublicKey, .unknownKid, .wrongIssuer, .wrongAudience, .expired, .issuedInFuture,
             .nonceMissing, .wrongNonce, .tamperedPayload, .truncated, .extraSegment:
            true
        case .noIDToken, .invalidGrant, .invalidClient, .invalidRequest, .http500, .http502HTML, .malformedJSON, .hang,
             .slow:
            false
        }
    }

    public static let allNames = [
        "alg_none", "hs256_with_public_key", "unknown_kid", "wrong_iss", "wrong_aud", "expired", "iat_future",
        "nonce_missing", "wrong_nonce", "tampered_payload", "truncated", "extra_segment", "no_id_token",
        "invalid_grant", "invalid_client", "invalid_request", "http_500", "http_502_html", "malformed_json", "hang",
        "slow:<ms>",
    ]
}
