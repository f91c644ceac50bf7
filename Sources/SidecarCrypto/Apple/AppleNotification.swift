import Foundation

/// A verified Apple server-to-server notification (the `payload` JWT of the POST body).
public struct AppleNotification: Sendable, Equatable {
    public enum EventType: Sendable, Equatable {
        case emailDisabled, emailEnabled, consentRevoked
        /// `account-delete` (older docs) and `account-deleted` (current docs).
        case accountDeleted
        /// A type this version does not know; the caller may acknowledge and ignore it.
        case unknown(String)

        init(_ name: String) {
            switch name {
            case "email-disabled": self = .emailDisabled
            case "email-enabled": self = .emailEnabled
            case "consent-revoked": self = .consentRevoked
            case "account-delete", "account-deleted": self = .accountDeleted
            default: self = .unknown(name)
            }
        }

        /// Whether the event ends the user's sessions.
        public var revokesSessions: Bool { self == .consentRevoked || self == .accountDeleted }
    }

    /// Deduplication key.
    public let jwtID: String
    public let audience: String
    public let issuedAt: Int64
    public let type: EventType
    public let subject: String
    /// `event_time` in milliseconds since the epoch (as in real payloads).
    public let eventTimeMilliseconds: Int64
    public let email: String?
    public let isPrivateEmail: Bool?
}

extension AppleIDTokenVerifier {
    /// Verifies a notification JWT (same keys, issuer and time rules as id_tokens) and parses
    /// `events`, given either as a JSON-encoded string (real payloads) or an object (Apple's docs).
    public func verifyNotification(_ token: String, keys: some JWSKeyResolver, now: Int64) throws(JWTError) -> AppleNotification {
        let claims = try verifiedClaims(token, keys: keys, now: now)
        let jwtID = try claims.requiredString("jti")
        guard !jwtID.isEmpty else { throw .invalidClaim("jti") }
        let events: [String: JSONValue]
        switch claims["events"] {
        case nil: throw .missingClaim("events")
        case .object(let object)?: events = object
        case .string(let text)?:
            guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)),
                  let object = value.objectValue
            else { throw .invalidClaim("events") }
            events = object
        default: throw .invalidClaim("events")
        }
        let event = JWTClaims(events)
        guard let type = event.string("type"), let subject = event.string("sub"), !subject.isEmpty,
              let eventTime = event.integer("event_time")
        else { throw .invalidClaim("events") }
        return AppleNotification(
            jwtID: jwtID,
            audience: try claims.audiences().first(where: audiences.contains) ?? "",
            issuedAt: try claims.requiredInteger("iat"),
            type: .init(type), subject: subject, eventTimeMilliseconds: eventTime,
            email: event.string("email"), isPrivateEmail: event.bool("is_private_email"))
    }
}
