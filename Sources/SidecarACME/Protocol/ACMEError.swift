/// Why an ACME step failed, in words for the log. `retryAfterSeconds` carries the CA's
/// `Retry-After` where it gave one (rate limits, maintenance), which the renewal schedule honours.
public struct ACMEError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// No answer: DNS, connect, TLS, timeout (the CA is down or unreachable).
        case transport
        /// An answer the protocol does not allow: wrong status, type, missing member, bad JSON.
        case malformed
        /// The CA refused with an RFC 7807 problem document (`type` without its URN prefix).
        case problem(String)
        /// The CA answered properly but the order cannot go on (an invalid authorization).
        case refused
        /// Local: keys, CSR, storage.
        case local
        /// The process is stopping: the step's wait was cut short (nothing to report or retry).
        case stopped
    }

    public let kind: Kind
    public let message: String
    public var retryAfterSeconds: Int?

    public init(_ kind: Kind, _ message: String, retryAfterSeconds: Int? = nil) {
        self.kind = kind
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
    }

    public var description: String { message }

    static func malformed(_ what: String, _ url: String) -> ACMEError {
        ACMEError(.malformed, "acme: \(url): \(what)")
    }
}
