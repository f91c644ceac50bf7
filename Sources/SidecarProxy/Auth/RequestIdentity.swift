import SidecarCrypto
import SidecarHTTP

/// What the authenticator found on one request, kept by the connection for the exchange:
/// the session (if any), which credentials to remove before forwarding, and a re-sealed
/// cookie to set on the response.
struct RequestIdentity {
    /// The accepted session, shared with the worker's session cache.
    var opened: OpenedSession?
    /// The request carries the session cookie and it must not reach the upstream.
    var stripCookie = false
    /// With `stripCookie`: the Cookie value without the session cookie (empty: no Cookie
    /// field is forwarded). Its capacity is kept from request to request.
    var otherCookies: [UInt8] = []
    /// The `Authorization` value that carried the session token of this request.
    var bearer: ByteRange?
    /// Some `Authorization` field carries a session token of this sidecar (valid, expired or
    /// revoked): every such field is removed when forwarding, the others pass.
    var stripBearer = false
    /// A `Set-Cookie` value to add to the upstream's response (re-sealed session).
    var setCookie: [UInt8]?
    /// Why the session credential the request carried was refused (`.accepted`: none was,
    /// or one was accepted), for the access line.
    var refusal = SessionOutcome.accepted

    var session: Session? { opened?.session }
    var isAuthenticated: Bool { opened != nil }

    mutating func reset() {
        if opened != nil { opened = nil }
        stripCookie = false
        if !otherCookies.isEmpty { otherCookies.removeAll(keepingCapacity: true) }
        bearer = nil
        stripBearer = false
        refusal = .accepted
        if setCookie != nil { setCookie = nil }
    }
}
