import SidecarCrypto

/// What the native endpoints answer: the JSON that hands an app its session token (a sign-in,
/// a refresh) and the JSON of a refusal.
///
/// A bearer token is the very value the session cookie carries, sealed under the cookie
/// name as associated data, so the proxy path opens both with one `SessionOpener`.
enum NativeAnswers {
    /// `{"token", "expires_at", "session_expires_at", "user": {"id", "email", "name"}}`.
    /// `expires_at` is when this token stops being accepted unless refreshed — its idle
    /// deadline, never after the session's absolute end, `session_expires_at` — the same two
    /// times `/me` answers, so the app knows when to refresh and when to sign in again.
    static func session(token: String, _ session: Session) -> LocalResponse {
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
    private static let hints = [
        "nonce_hashed": "send the nonce in the body exactly as /native/nonce gave it; only Apple's request "
            + "(ASAuthorizationAppleIDRequest.nonce) may carry its SHA-256 hex",
        // A form-encoded body (the web callback's shape) is the usual cause.
        "body_invalid": "the body must be a JSON object (Content-Type: application/json) with identityToken "
            + "and optionally authorizationCode, nonce, firstName and lastName, each a string",
    ]

    static func error(_ status: Int, _ reason: String) -> LocalResponse {
        var fields: [String: JSONValue] = ["error": .string(reason)]
        if let hint = hints[reason] { fields["message"] = .string(hint) }
        var answer = AuthPages.json(status, .object(fields))
        if status == 401 { answer.extraFields.append(("WWW-Authenticate", Array("Bearer realm=\"sidecar\"".utf8))) }
        return answer
    }
}

extension Session {
    /// When the credential that carries this session (cookie or bearer token) stops being
    /// accepted unless used again (a cookie is re-sealed on use, a token refreshed): its idle
    /// deadline, never after the absolute end. `expires_at` in `/me` and `/native` alike.
    var credentialExpiresAt: Int64 { min(idleDeadline, expiresAt) }
}
