import Foundation
import SidecarCrypto

/// The CA's JSON answers, read strictly: every member this client relies on must be there
/// with its type, URLs must be URLs the client would fetch (`ACMEURL`), and anything else is
/// an `ACMEError` naming the URL and the member — never a crash, never a guess.
enum ACMEJSON {
    /// Bodies above this are refused before parsing (a directory or order is a few hundred
    /// bytes; an order with the maximum of identifiers a few tens of KiB).
    static let maxBytes = 256 * 1024

    static func object(_ body: [UInt8], from url: String) throws(ACMEError) -> [String: JSONValue] {
        guard body.count <= maxBytes else { throw .malformed("answer of \(body.count) bytes is too large", url) }
        let value: JSONValue
        do { value = try JSONDecoder().decode(JSONValue.self, from: Data(body)) } catch {
            throw .malformed("answer is not JSON", url)
        }
        guard case .object(let members) = value else { throw .malformed("answer is not a JSON object", url) }
        return members
    }

    static func string(_ members: [String: JSONValue], _ key: String, _ url: String) throws(ACMEError) -> String {
        guard let value = members[key] else { throw .malformed("\"\(key)\" is missing", url) }
        guard case .string(let text) = value else { throw .malformed("\"\(key)\" is not a string", url) }
        return text
    }

    static func url(_ members: [String: JSONValue], _ key: String, _ from: String) throws(ACMEError) -> ACMEURL {
        let text = try string(members, key, from)
        guard let url = ACMEURL(text) else { throw .malformed("\"\(key)\" is not an https URL", from) }
        return url
    }

    static func optionalURL(_ members: [String: JSONValue], _ key: String, _ from: String) throws(ACMEError) -> ACMEURL? {
        guard let value = members[key], value != .null else { return nil }
        return try url(members, key, from)
    }

    static func array(_ members: [String: JSONValue], _ key: String, _ url: String) throws(ACMEError) -> [JSONValue] {
        guard let value = members[key] else { throw .malformed("\"\(key)\" is missing", url) }
        guard case .array(let items) = value else { throw .malformed("\"\(key)\" is not an array", url) }
        return items
    }
}

/// RFC 8555 §7.1.1. `renewalInfo` is RFC 9773's (ARI), absent at CAs without it.
public struct ACMEDirectory: Sendable {
    public let newNonce: ACMEURL
    public let newAccount: ACMEURL
    public let newOrder: ACMEURL
    public let renewalInfo: ACMEURL?
    public let termsOfService: String?
    public let externalAccountRequired: Bool

    init(_ body: [UInt8], url: String) throws(ACMEError) {
        let members = try ACMEJSON.object(body, from: url)
        newNonce = try ACMEJSON.url(members, "newNonce", url)
        newAccount = try ACMEJSON.url(members, "newAccount", url)
        newOrder = try ACMEJSON.url(members, "newOrder", url)
        renewalInfo = try ACMEJSON.optionalURL(members, "renewalInfo", url)
        let meta = members["meta"]?.objectValue ?? [:]
        termsOfService = meta["termsOfService"]?.stringValue
        if case .bool(let required) = meta["externalAccountRequired"] { externalAccountRequired = required } else {
            externalAccountRequired = false
        }
    }
}

/// RFC 8555 §7.1.3.
public struct ACMEOrder: Sendable {
    public enum Status: String, Sendable { case pending, ready, processing, valid, invalid }
    public let status: Status
    public let authorizations: [ACMEURL]
    public let finalize: ACMEURL
    public let certificate: ACMEURL?
    public let problem: String?

    init(_ body: [UInt8], url: String) throws(ACMEError) {
        let members = try ACMEJSON.object(body, from: url)
        let statusText = try ACMEJSON.string(members, "status", url)
        guard let status = Status(rawValue: statusText) else { throw .malformed("unknown order status \"\(statusText)\"", url) }
        self.status = status
        var authorizations: [ACMEURL] = []
        for item in try ACMEJSON.array(members, "authorizations", url) {
            guard let text = item.stringValue, let authorization = ACMEURL(text) else {
                throw .malformed("\"authorizations\" holds something other than an https URL", url)
            }
            authorizations.append(authorization)
        }
        guard authorizations.count <= 100 else { throw .malformed("more than 100 authorizations", url) }
        self.authorizations = authorizations
        finalize = try ACMEJSON.url(members, "finalize", url)
        certificate = try ACMEJSON.optionalURL(members, "certificate", url)
        problem = members["error"]?.objectValue.map(ACMEProblem.init(members:))?.summary
    }
}

/// RFC 8555 §7.1.4, with the one challenge of the type this client solves.
public struct ACMEAuthorization: Sendable {
    public enum Status: String, Sendable { case pending, valid, invalid, deactivated, expired, revoked }
    public struct Challenge: Sendable {
        public let type: String
        public let url: ACMEURL
        public let token: String
        public let status: String
        public let problem: String?
    }

    public let status: Status
    public let domain: String
    public let challenges: [Challenge]

    init(_ body: [UInt8], url: String) throws(ACMEError) {
        let members = try ACMEJSON.object(body, from: url)
        let statusText = try ACMEJSON.string(members, "status", url)
        guard let status = Status(rawValue: statusText) else {
            throw .malformed("unknown authorization status \"\(statusText)\"", url)
        }
        self.status = status
        guard let identifier = members["identifier"]?.objectValue else { throw .malformed("\"identifier\" is missing", url) }
        domain = try ACMEJSON.string(identifier, "value", url)
        var challenges: [Challenge] = []
        for item in try ACMEJSON.array(members, "challenges", url) {
            guard let challenge = item.objectValue else { throw .malformed("a challenge is not an object", url) }
            let token = challenge["token"]?.stringValue ?? ""
            challenges.append(Challenge(
                type: try ACMEJSON.string(challenge, "type", url), url: try ACMEJSON.url(challenge, "url", url),
                token: token, status: challenge["status"]?.stringValue ?? "",
                problem: challenge["error"]?.objectValue.map(ACMEProblem.init(members:))?.summary))
        }
        self.challenges = challenges
    }

    /// RFC 8555 §8.1: a token is base64url, at least 128 bits; anything else could carry a
    /// path (`../`) or header bytes into the challenge answer.
    static func isValidToken(_ token: String) -> Bool {
        token.utf8.count >= 22 && token.utf8.count <= 256 && token.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }
}

/// RFC 7807 problem document, as the CA sends with every error (RFC 8555 §6.7).
public struct ACMEProblem: Sendable {
    /// Without `urn:ietf:params:acme:error:` (`badNonce`, `rateLimited`, …).
    public let type: String
    public let detail: String

    init(members: [String: JSONValue]) {
        let full = members["type"]?.stringValue ?? "about:blank"
        let prefix = "urn:ietf:params:acme:error:"
        type = full.hasPrefix(prefix) ? String(full.dropFirst(prefix.count)) : full
        detail = String((members["detail"]?.stringValue ?? "").prefix(512))
    }

    /// nil when the body is not a problem document.
    init?(_ body: [UInt8]) {
        guard body.count <= ACMEJSON.maxBytes,
              let value = try? JSONDecoder().decode(JSONValue.self, from: Data(body)),
              let members = value.objectValue, members["type"]?.stringValue != nil else { return nil }
        self.init(members: members)
    }

    var summary: String { detail.isEmpty ? type : "\(type): \(detail)" }
}

/// RFC 9773 §4.2: when the CA would like this certificate renewed.
public struct ACMERenewalWindow: Sendable, Equatable {
    public let start: Date
    public let end: Date

    init(_ body: [UInt8], url: String) throws(ACMEError) {
        let members = try ACMEJSON.object(body, from: url)
        guard let window = members["suggestedWindow"]?.objectValue else {
            throw .malformed("\"suggestedWindow\" is missing", url)
        }
        let start = try Self.time(ACMEJSON.string(window, "start", url), "start", url)
        let end = try Self.time(ACMEJSON.string(window, "end", url), "end", url)
        guard end > start else { throw .malformed("\"suggestedWindow\" ends before it starts", url) }
        self.start = start
        self.end = end
    }

    private static func time(_ text: String, _ key: String, _ url: String) throws(ACMEError) -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return date }
        throw .malformed("\"\(key)\" is not an RFC 3339 time", url)
    }

    /// A uniformly random moment in the window (RFC 9773 §4.2's advice), so that replicas and
    /// other clients of the CA do not all come at its start.
    public func randomMoment() -> Date {
        let span = end.timeIntervalSince(start)
        return start.addingTimeInterval(Double.random(in: 0..<span))
    }
}
