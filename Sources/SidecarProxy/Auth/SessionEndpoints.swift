import Logging
import SidecarApple
import SidecarCrypto
import SidecarStore
import SidecarHTTP

/// `{prefix}/logout`, `/me` and `/check`: endpoints about the current
/// session (cookie or bearer token), answered at once.
extension Authenticator {
    /// Clears the cookie, revokes the session id, revokes Apple's refresh token in the
    /// background, then 303 to a safe `rd` or the signed-out page (204 for API clients). A GET
    /// counts only from our own site, so a cross-site link cannot sign anyone out.
    func logout(_ request: EndpointRequest, completion: @escaping (LocalResponse) -> Void) -> EndpointAnswer {
        let head = request.head
        if head.method == .get && !isSameSite(head) {
            request.logger.warning("logout refused", metadata: ["reason": "logout_cross_site", "status": .stringConvertible(403)])
            if request.isAPIClient { return .now(AuthPages.json(403, .object(["error": .string("cross_site")]))) }
            return .now(settings.pages(for: head).confirmSignOut(logoutURL: Array((settings.prefix + "/logout").utf8), for: head))
        }
        var identity = RequestIdentity()
        identify(head, trace: request.trace, into: &identity)
        guard let session = identity.session else {
            request.logger.info("logout", metadata: ["reason": "no_session"])
            return .now(signedOut(request))
        }
        // The answer waits for the store (an fsync, a Redis round trip): "signed out" must
        // be true everywhere a copy of the cookie could be presented.
        let spanStartNs = spans == nil || !request.trace.isSampled ? 0 : SpanClock.nowNs()
        settings.shared.store.revokeSession(id: session.id, expiresAt: session.expiresAt) { [self] recorded in
            if spanStartNs != 0 {
                spans?.recordStoreCall(.storeRevoke, of: request.trace, startNs: spanStartNs, failed: recorded.isFailure)
            }
            if case .failure(let error) = recorded {
                request.logger.error("logout not recorded", metadata: [
                    "reason": "store_failed", "error": "\(error)",
                ])
                return completion(AuthPages.storeUnavailable(
                    json: request.isAPIClient, loginPath: loginPath, pages: settings.pages(for: head), for: head))
            }
            if let refreshToken = session.appleRefreshToken {
                revokeAtApple(refreshToken, clientID: session.appleClientID ?? settings.clientID, trace: request.trace)
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
                    loginURL: Array((loginPath + "?rd=%2F").utf8), userName: userName ?? "", for: head)
            }
        }
        answer.extraFields.append(("Set-Cookie", SetCookie.clearSession(settings: settings, for: request.head)))
        return answer
    }

    /// `Sec-Fetch-Site: same-origin|none`, else `Origin` or `Referer` on the origin of the
    /// request's sign-in (public_url's, or its site's own).
    /// Shared by logout and account deletion (`/revoke`).
    func isSameSite(_ head: HTTPRequestHead) -> Bool {
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

    /// `clientID`: the client the token was issued to (a native session's bundle id). Logout
    /// does not wait for the answer: the local revocation already ended the session.
    private func revokeAtApple(_ refreshToken: String, clientID: String, trace: TraceContext) {
        revokeAtApple(refreshToken, clientID: clientID, trace: trace) { [logger] result in
            switch result {
            case .success: logger.info("apple refresh token revoked", metadata: ["reason": "ok"])
            case .failure(let failure):
                logger.warning("apple refresh token revocation failed", metadata: ["reason": "\(failure.reason)"])
            }
        }
    }

    /// Revokes an Apple refresh token with the client secret of `clientID`; `completion`
    /// runs once on this loop with nil on success or why it failed (a stable reason code).
    /// The call is a span of `trace` (the request that asked for it) when that is sampled.
    func revokeAtApple(
        _ refreshToken: String, clientID: String, trace: TraceContext,
        completion: @escaping (Result<Void, AppleRevokeFailure>) -> Void
    ) {
        let secret: String
        do { secret = try settings.secrets.secret(forClientID: clientID) } catch {
            return completion(.failure(AppleRevokeFailure(reason: "client_secret_failed")))
        }
        let startedMs = clockMs
        let spanStartNs = spans == nil || !trace.isSampled ? 0 : SpanClock.nowNs()
        api.revoke(token: refreshToken, hint: .refreshToken, clientID: clientID, clientSecret: secret) {
            [weak self] result in
            if let self {
                metrics.recordAppleCall(.revoke, ms: clockMs - startedMs)
                if spanStartNs != 0 {
                    spans?.recordAppleCall(.appleRevoke, of: trace, method: .post, startNs: spanStartNs, result)
                }
            }
            completion(result.mapError { AppleRevokeFailure(reason: $0.lifecycleReason) })
        }
    }

    /// The current identity as JSON, or 401.
    func me(_ request: EndpointRequest) -> LocalResponse {
        var identity = RequestIdentity()
        identify(request.head, trace: request.trace, into: &identity)
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
        identify(request.head, trace: request.trace, into: &identity)
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
        var answer = AuthPages.json(401, .object(["error": .string("unauthenticated"), "login": .string(loginPath)]))
        answer.extraFields.append(("WWW-Authenticate", Array("Bearer realm=\"sidecar\"".utf8)))
        return answer
    }

    /// Runs an endpoint: its answer now, or `.later` through `completion`, which then runs on
    /// a later turn of this loop — never before this call returned, whatever the flow waited
    /// on (a key set already cached, a store on this machine answer at once).
    func handle(
        _ endpoint: AuthEndpoint, _ request: EndpointRequest, completion: @escaping (LocalResponse) -> Void
    ) -> EndpointAnswer {
        switch endpoint {
        case .login: return .now(login(request))
        case .logout: return logout(request, completion: onNextTurn(completion))
        case .me: return .now(me(request))
        case .check: return .now(check(request))
        case .jwks: return .now(jwks(request))
        case .callback:
            CallbackFlow(auth: self, request: request, completion: onNextTurn(completion)).start()
        case .native:
            guard settings.nativeEnabled else { return .now(.plain(404)) }  // no native apps configured
            NativeSignInFlow(auth: self, request: request, completion: onNextTurn(completion)).start()
        case .nativeNonce: return .now(nativeNonce(request))
        case .nativeRefresh: return .now(nativeRefresh(request))
        case .androidCallback: return .now(androidCallback(request))
        case .appleNotifications:
            NotificationFlow(auth: self, request: request, completion: onNextTurn(completion)).start()
        case .revoke:
            AccountRevocationFlow(auth: self, request: request, completion: onNextTurn(completion)).start()
        }
        return .later
    }

    /// `completion`, run on the loop's next turn (made only for the endpoints that answer later).
    private func onNextTurn(_ completion: @escaping (LocalResponse) -> Void) -> (LocalResponse) -> Void {
        { [nextTurn] answer in nextTurn.run { completion(answer) } }
    }
}

/// How one of the sidecar's own endpoints answers.
enum EndpointAnswer {
    case now(LocalResponse)
    /// Through the completion, on a later turn of the loop.
    case later
}

/// Why Apple did not confirm a token revocation: an `AppleError.lifecycleReason` or
/// `client_secret_failed` (never a secret).
struct AppleRevokeFailure: Error {
    let reason: String
}

extension AppleError {
    /// A bounded reason code for revocation and revalidation logs and metrics: Apple's own
    /// error code when it is one Apple documents (`apple_invalid_grant`, …), else the kind of
    /// failure (`apple_server_error`, `apple_invalid_response`, `apple_timeout`, …).
    var lifecycleReason: String {
        switch self {
        case .rejected(let code, _, _):
            if case .other = code { return "apple_rejected" }
            return "apple_" + code.code
        default:
            return LoginFailure.exchange(self).reason
        }
    }
}
