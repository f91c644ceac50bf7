import Logging
import SidecarApple
import SidecarCrypto
import SidecarStore
import SidecarHTTP

/// `{prefix}/logout`, `/me`, `/check` and `/jwks.json`: endpoints about the current
/// session (cookie or bearer token), answered at once but for logout, which waits for the store.
final class SessionEndpoints {
    private var settings: AuthSettings
    private let sessions: SessionReader
    private let apple: AppleCalls

    init(settings: AuthSettings, sessions: SessionReader, apple: AppleCalls) {
        self.settings = settings
        self.sessions = sessions
        self.apple = apple
    }

    func apply(_ new: AuthSettings) { settings = new }

    /// Clears the cookie, revokes the session id, revokes Apple's refresh token in the
    /// background, then 303 to a safe `rd` or the signed-out page (204 for API clients). A GET
    /// counts only from our own site, so a cross-site link cannot sign anyone out.
    func logout(_ request: EndpointRequest, completion: @escaping (LocalResponse) -> Void) -> EndpointAnswer {
        let head = request.head
        if head.method == .get && !Self.isSameSite(head, settings: settings) {
            request.logger.warning("logout refused", metadata: ["reason": "logout_cross_site", "status": .stringConvertible(403)])
            if request.isAPIClient { return .now(AuthPages.json(403, .object(["error": .string("cross_site")]))) }
            return .now(settings.pages(for: head).confirmSignOut(logoutURL: Array((settings.prefix + "/logout").utf8), for: head))
        }
        var identity = RequestIdentity()
        sessions.identify(head, trace: request.trace, into: &identity)
        guard let session = identity.session else {
            request.logger.info("logout", metadata: ["reason": "no_session"])
            return .now(signedOut(request))
        }
        // The answer waits for the store (an fsync, a Redis round trip): "signed out" must
        // be true everywhere a copy of the cookie could be presented.
        let spanStartNs = apple.spanStart(for: request.trace)
        settings.shared.store.revokeSession(id: session.id, expiresAt: session.expiresAt) { [self] recorded in
            if spanStartNs != 0 {
                apple.spans?.recordStoreCall(.storeRevoke, of: request.trace, startNs: spanStartNs, failed: recorded.isFailure)
            }
            if case .failure(let error) = recorded {
                request.logger.error("logout not recorded", metadata: [
                    "reason": "store_failed", "error": "\(error)",
                ])
                return completion(AuthPages.storeUnavailable(
                    json: request.isAPIClient, loginPath: settings.loginPath, pages: settings.pages(for: head), for: head))
            }
            if let refreshToken = session.appleRefreshToken {
                apple.revokeInBackground(
                    refreshToken, clientID: session.appleClientID ?? settings.clientID, trace: request.trace)
            }
            request.logger.info("logout", metadata: ["reason": "ok", "sub": "\(session.subject)"])
            var answer = signedOut(request, userName: session.name)
            answer.userID = session.subject
            completion(answer)
        }
        return .later
    }

    /// Clears the cookie; 303 to a safe `rd`, else the signed-out page (204 for API clients).
    private func signedOut(_ request: EndpointRequest, userName: String? = nil) -> LocalResponse {
        var answer: LocalResponse
        if request.isAPIClient {
            answer = LocalResponse(status: 204, reason: "No Content", body: [])
        } else {
            let head = request.head
            let rd = head.query.flatMap { FormFields(head.bytes($0)) }?.single("rd")
            if let target = rd.flatMap({ settings.redirects.safeTarget($0) }) {
                answer = AuthPages.redirect(303, to: target)
            } else {
                // Redirecting to "/" would send a protected site straight back into the login.
                answer = settings.pages(for: head).signedOut(
                    loginURL: Array((settings.loginPath + "?rd=%2F").utf8), userName: userName ?? "", for: head)
            }
        }
        answer.extraFields.append(("Set-Cookie", SetCookie.clearSession(settings: settings, for: request.head)))
        return answer
    }

    /// `Sec-Fetch-Site: same-origin|none`, else `Origin` or `Referer` on the origin of the
    /// request's sign-in (public_url's, or its site's own).
    /// Shared by logout and account deletion (`/revoke`).
    static func isSameSite(_ head: HTTPRequestHead, settings: AuthSettings) -> Bool {
        if let site = head.firstValueString("sec-fetch-site") {
            return site == "same-origin" || site == "none"
        }
        let origin = settings.realms.all[settings.realms.realm(of: head)].origin
        if let value = head.firstValueString("origin") { return value == origin }
        if let referer = head.firstValueString("referer") {
            return referer == origin || referer.hasPrefix(origin + "/") || referer.hasPrefix(origin + "?")
        }
        return false
    }

    /// The current identity as JSON, or 401.
    func me(_ request: EndpointRequest) -> LocalResponse {
        var identity = RequestIdentity()
        sessions.identify(request.head, trace: request.trace, into: &identity)
        guard let session = identity.session else { return unauthenticatedJSON() }
        var answer = AuthPages.json(200, .object([
            "id": .string(session.subject),
            "email": session.email.map(JSONValue.string) ?? .null,
            "email_verified": .bool(session.emailVerified),
            "private_email": .bool(session.privateEmail),
            "name": session.name.map(JSONValue.string) ?? .null,
            "expires_at": .integer(session.credentialExpiresAt),
            "session_expires_at": .integer(session.expiresAt),
        ]))
        if let cookie = identity.setCookie { answer.extraFields.append(("Set-Cookie", cookie)) }
        answer.userID = session.subject
        return answer
    }

    /// Forward-auth: 200 with the identity headers on the response, or 401 (never a
    /// redirect), or 403 when the rule for the request asked about refuses it.
    func check(_ request: EndpointRequest) -> LocalResponse {
        var rules: (verdict: RuleVerdict, route: Route)?
        switch request.forwardAuth {
        case .noRules:
            break
        case .unknown(let reason):
            return ruleRefusal(request, rule: nil, reason: reason)
        case .verdict(let verdict, let route):
            if let rule = verdict.deny { return ruleRefusal(request, rule: rule, reason: "deny") }
            // nginx takes any other status for an error of the check: 403 as for a rule.
            if let rule = verdict.ambiguousHeaders {
                return ruleRefusal(request, rule: rule, reason: "ambiguous_set_headers")
            }
            // No identity headers: a public path is served as to someone not signed in.
            if !verdict.needsSession {
                var answer = LocalResponse(status: 200, reason: "OK", body: [])
                answer.ruleHeaders = (route.headers, verdict.headers)
                return answer
            }
            rules = (verdict, route)
        }
        var identity = RequestIdentity()
        sessions.identify(request.head, trace: request.trace, into: &identity)
        guard let opened = identity.opened else { return unauthenticatedJSON() }
        let subject = opened.withSubject { String(decoding: $0, as: UTF8.self) }
        if let rules, rules.verdict.restricting.count > 0 {
            // The lists a rule may check need the decoded session (kept on the cached entry).
            let session = opened.session
            if let (rule, reason) = rules.route.refusal(
                rules.verdict, subject: session.subject, email: session.email, privateEmail: session.privateEmail) {
                var answer = ruleRefusal(request, rule: rule, reason: reason)
                answer.userID = subject
                return answer
            }
        }
        // The identity fields rendered when the session was opened, as a forwarded request
        // gets them: nothing decoded, encoded or allocated again per check.
        var answer = LocalResponse(status: 200, reason: "OK", body: [])
        answer.identity = opened
        if let cookie = identity.setCookie { answer.extraFields.append(("Set-Cookie", cookie)) }
        if let rules { answer.ruleHeaders = (rules.route.headers, rules.verdict.headers) }
        answer.userID = subject
        return answer
    }

    /// The public keys of the signed assertion; 404 when assertions are off.
    func jwks(_ request: EndpointRequest) -> LocalResponse {
        guard let assertion = settings.assertion else { return .plain(404) }
        var answer = LocalResponse(status: 200, reason: "OK", contentType: "application/jwk-set+json", body: assertion.jwks)
        answer.cacheControl = AssertionSettings.jwksCacheControl
        return answer
    }

    /// 403 JSON for a forward-auth request a rule refuses (or one the rules could not be
    /// applied to), logged with the rule and why.
    private func ruleRefusal(_ request: EndpointRequest, rule: Int?, reason: String) -> LocalResponse {
        var metadata: Logger.Metadata = ["reason": .string(reason), "endpoint": "check"]
        if let rule { metadata["rule"] = .stringConvertible(rule) }
        request.logger.info("request refused by a rule", metadata: metadata)
        return AuthPages.json(403, .object(["error": .string("forbidden")]))
    }

    private func unauthenticatedJSON() -> LocalResponse {
        var answer = AuthPages.json(401, .object(["error": .string("unauthenticated"), "login": .string(settings.loginPath)]))
        answer.extraFields.append(("WWW-Authenticate", Array("Bearer realm=\"sidecar\"".utf8)))
        return answer
    }
}
