import Logging
import SidecarCrypto

/// The bearer side of native sessions: the JSON that hands an app its session
/// token, and `POST {prefix}/native/refresh`, which re-seals it with a new idle deadline.
///
/// A bearer token is the very value the session cookie carries, sealed under the cookie
/// name as associated data, so the proxy path opens both with one `SessionOpener`.
extension Authenticator {
    /// `{"token", "expires_at", "session_expires_at", "user": {"id", "email", "name"}}`.
    /// `expires_at` is when this token stops being accepted unless refreshed — its idle
    /// deadline, never after the session's absolute end, `session_expires_at` — the same two
    /// times `/me` answers, so the app knows when to refresh and when to sign in again.
    static func nativeSessionAnswer(token: String, _ session: Session) -> LocalResponse {
        AuthPages.json(200, .object([
            "token": .string(token),
            "expires_at": .integer(session.credentialExpiresAt),
            "session_expires_at": .integer(session.expiresAt),
            "user": .object([
                "id": .string(session.subject),
                "email": session.email.map(JSONValue.string) ?? .null,
                "name": session.name.map(JSONValue.string) ?? .null,
            ]),
        ]))
    }

    /// A native endpoint's refusal: `{"error": "<reason>"}` with the status of the reason.
    /// A sentence for the errors an app developer most often causes, in the JSON answer.
    private static let nativeHints = [
        "nonce_hashed": "send the nonce in the body exactly as /native/nonce gave it; only Apple's request "
            + "(ASAuthorizationAppleIDRequest.nonce) may carry its SHA-256 hex",
        // A form-encoded body (the web callback's shape) is the usual cause.
        "body_invalid": "the body must be a JSON object (Content-Type: application/json) with identityToken "
            + "and optionally authorizationCode, nonce, firstName and lastName, each a string",
    ]

    static func nativeError(_ status: Int, _ reason: String) -> LocalResponse {
        var fields: [String: JSONValue] = ["error": .string(reason)]
        if let hint = nativeHints[reason] { fields["message"] = .string(hint) }
        var answer = AuthPages.json(status, .object(fields))
        if status == 401 { answer.extraFields.append(("WWW-Authenticate", Array("Bearer realm=\"sidecar\"".utf8))) }
        return answer
    }

    /// Same session id, subject, absolute expiry and Apple refresh token; a new idle deadline
    /// (`session.idle_timeout` from now, capped by the absolute expiry), the first secret, and
    /// the latest revalidation (`session.revalidate`).
    /// The old token stays valid until its own idle deadline: an app that lost the answer
    /// can still retry with it.
    func nativeRefresh(_ request: EndpointRequest) -> LocalResponse {
        let settings = self.settings
        guard settings.nativeEnabled else { return .plain(404) }
        let now = UnixTime.now()
        let opened: OpenedSession
        switch bearerSession(request.head, now: now) {
        case .session(let session):
            opened = session
        case .refused(let outcome):
            return refuseRefresh(outcome, reason: "session_" + outcome.reason, request)
        case .missing:
            return refuseRefresh(nil, reason: "bearer_missing", request)
        }
        var renewed = opened.session
        // A revalidation confirmed since this token was sealed travels in the new one, so the
        // app's session is not checked with Apple again for a period.
        if isRevalidationDue(renewed, now: now), let confirmedAt = revalidate(opened, now: now, trace: request.trace) {
            renewed.lastRevalidation = confirmedAt
        }
        renewed.idleDeadline = max(renewed.idleDeadline, min(now + settings.idleTimeout, renewed.expiresAt))
        let token: String
        do {
            token = try settings.sessions.sealSession(
                renewed, cookieName: settings.realms.all[settings.realms.realm(of: request.head)].sessionContext)
        } catch {
            request.logger.error("native refresh failed", metadata: ["reason": "internal_error", "status": .stringConvertible(500)])
            return Self.nativeError(500, "internal_error")
        }
        metrics.recordNativeRefresh(.accepted)
        request.logger.info("native session refreshed", metadata: ["reason": "ok", "sub": "\(renewed.subject)"])
        var answer = Self.nativeSessionAnswer(token: token, renewed)
        answer.userID = renewed.subject
        return answer
    }

    private func refuseRefresh(_ outcome: SessionOutcome?, reason: String, _ request: EndpointRequest) -> LocalResponse {
        metrics.recordNativeRefresh(outcome)
        request.logger.info("native refresh refused", metadata: ["reason": "\(reason)", "status": .stringConvertible(401)])
        return Self.nativeError(401, reason)
    }
}

extension Session {
    /// When the credential that carries this session (cookie or bearer token) stops being
    /// accepted unless used again (a cookie is re-sealed on use, a token refreshed): its idle
    /// deadline, never after the absolute end. `expires_at` in `/me` and `/native` alike.
    var credentialExpiresAt: Int64 { min(idleDeadline, expiresAt) }
}
