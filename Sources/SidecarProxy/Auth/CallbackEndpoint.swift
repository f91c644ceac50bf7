import Logging
import SidecarApple
import SidecarCrypto
import SidecarHTTP

/// `POST {prefix}/callback` as a small asynchronous flow: state check, code
/// exchange at Apple, id_token verification, access policy, then the session cookie and a
/// 303. Every answer clears the login cookie; every failure is one log line with a reason.
final class CallbackFlow {
    private let settings: AuthSettings
    private let apple: AppleCalls
    private let metrics: MetricsRecorder
    /// The sign-in of the host the callback came to: its state, Services ID and sessions.
    private let realm: SignInRealm
    private let request: EndpointRequest
    private let completion: (LocalResponse) -> Void
    private var answered = false
    /// The login cookie this callback belongs to (named by the returned state).
    private var loginCookie: String?
    private var login: LoginState?

    init(
        settings: AuthSettings, apple: AppleCalls, metrics: MetricsRecorder, request: EndpointRequest,
        completion: @escaping (LocalResponse) -> Void
    ) {
        self.settings = settings
        self.apple = apple
        self.metrics = metrics
        realm = settings.realms.all[settings.realms.realm(of: request.head)]
        self.request = request
        self.completion = completion
    }

    func start() {
        guard let form = FormFields(request.body),
              ["state", "code", "id_token", "user", "error"].allSatisfy({ form.count($0) <= 1 })
        else { return fail(.formInvalid) }
        guard let state = form.single("state"), !state.isEmpty else { return fail(.stateMissing) }
        let login: LoginState
        do throws(LoginFailure) { login = try openLoginState(state) } catch { return fail(error) }
        self.login = login
        // Only a callback that could sign someone in spends its state: an `error` (a cancel)
        // or an empty form stores nothing, so abandoned sign-ins cost the store nothing.
        if let error = form.single("error") {
            return fail(error == "user_cancelled_authorize" ? .appleCancelled : .appleRefused)
        }
        guard Self.nonEmpty(form.single("code")) || Self.nonEmpty(form.single("id_token")) else {
            return fail(.codeMissing)
        }
        // Spent before Apple is asked: a replayed form_post (at this replica or another) is
        // refused without a second code exchange.
        let claimStartNs = apple.spans == nil ? 0 : SpanClock.nowNs()
        settings.shared.claimOnce(.loginState, SHA256.hash(Array(state.utf8)), until: login.expiresAt) { [self] claim in
            if claimStartNs != 0 { apple.spans?.recordClaim(of: request.trace, startNs: claimStartNs, claim) }
            switch claim {
            case .claimed: afterStateSpent(form)
            case .alreadyUsed: fail(.stateReplayed)
            case .unavailable(let why):
                request.logger.error("login state could not be spent", metadata: ["error": "\(why)"])
                fail(.storeUnavailable)
            }
        }
    }

    private func afterStateSpent(_ form: FormFields) {
        guard let login else { return fail(.stateInvalid) }
        guard let code = form.single("code"), !code.isEmpty else { return fail(.codeMissing) }
        let secret: String
        do {
            secret = try settings.secrets.secret(forClientID: realm.clientID)
        } catch {
            request.logger.error("client secret could not be signed", metadata: ["error": "\(error)"])
            return fail(.internalError)
        }
        apple.exchangeCode(
            code: code, redirectURI: realm.redirectURI, codeVerifier: login.codeVerifier,
            clientID: realm.clientID, clientSecret: secret, trace: request.trace
        ) { [self] result in
            switch result {
            case .failure(let error):
                if case .rejected(.invalidClient, _, _) = error { logClientRefused() }
                fail(.exchange(error))
            case .success(let tokens):
                guard let idToken = tokens.idToken, !idToken.isEmpty else { return fail(.noIDToken) }
                verify(idToken, callbackToken: form.single("id_token"), tokens: tokens, user: form.single("user"))
            }
        }
    }

    private static func nonEmpty(_ value: String?) -> Bool { !(value ?? "").isEmpty }

    /// Apple refusing the client secret is the configuration's fault and lasts until the
    /// operator fixes it, while the user is only told to try later: said here, at error level.
    static let clientRefusedMessage = "Apple refused the client secret (invalid_client): every sign-in fails "
        + "until apple.key_id, apple.team_id, apple.client_id and apple.private_key_file match a key of this "
        + "team enabled for Sign in with Apple and a Services ID (`sidecar check --online` asks Apple)"

    private func logClientRefused() {
        let secrets = settings.secrets
        request.logger.error(
            "\(Self.clientRefusedMessage)",
            metadata: ["key_id": "\(secrets.keyID)", "team_id": "\(secrets.teamID)", "client_id": "\(realm.clientID)"])
    }

    /// Step 1: the login cookie named by this state, authentic, unexpired, same state.
    private func openLoginState(_ state: String) throws(LoginFailure) -> LoginState {
        let name = settings.loginCookieName(forState: state)
        let head = request.head
        let value: [UInt8]? = head.withView { view in
            CookieHeader.find(Array(name.utf8), in: view).map { Array(view.bytes[$0]) }
        }
        guard let value else {
            throw settings.loginCookies(in: head).isEmpty ? .stateMissing : .stateMismatch
        }
        loginCookie = name
        do {
            let login = try settings.loginStates.open(value, context: name + realm.loginContextSuffix, now: UnixTime.now()).payload
            guard ConstantTime.equals(login.state.utf8, state.utf8) else { throw LoginFailure.stateMismatch }
            return login
        } catch let error as LoginFailure {
            throw error
        } catch SealedOpenError.expired {
            throw .stateExpired
        } catch {
            throw .stateInvalid
        }
    }

    /// Step 3: the token response's id_token (refetching keys once for an unknown kid), and
    /// the callback's own id_token if Apple sent one: same subject.
    private func verify(_ idToken: String, callbackToken: String?, tokens: TokenResponse, user: String?) {
        apple.keys.withKeys { [self] keys in
            guard let keys else { return fail(.keysUnavailable) }
            switch check(idToken, keys) {
            case .success(let identity):
                finish(identity, callbackToken: callbackToken, keys: keys, tokens: tokens, user: user)
            case .failure(.unknownKey):
                let spanStartNs = apple.spans == nil ? 0 : SpanClock.nowNs()
                apple.keys.refetchForUnknownKey { [self] fresh in
                    if spanStartNs != 0 {
                        apple.spans?.recordCall(.appleKeys, of: request.trace, method: .get, startNs: spanStartNs,
                                               status: 0, failed: fresh == nil)
                    }
                    guard let fresh else { return fail(.token(.unknownKey)) }
                    switch check(idToken, fresh) {
                    case .success(let identity):
                        finish(identity, callbackToken: callbackToken, keys: fresh, tokens: tokens, user: user)
                    case .failure(let error):
                        fail(.token(error))
                    }
                }
            case .failure(let error):
                fail(.token(error))
            }
        }
    }

    private func check(_ token: String, _ keys: JWKSet) -> Result<AppleIdentity, JWTError> {
        guard let login else { return .failure(.nonceMissing) }
        return Result { () throws(JWTError) in
            try realm.verifier.verify(
                token, keys: keys, now: UnixTime.now(), nonce: .oneOf([WebSignIn.nonceHash(login.nonce)]))
        }
    }

    /// Steps 3 (callback token) to 5.
    private func finish(_ identity: AppleIdentity, callbackToken: String?, keys: JWKSet, tokens: TokenResponse, user: String?) {
        if let callbackToken {
            switch check(callbackToken, keys) {
            case .failure(let error):
                return fail(.callbackToken(error))
            case .success(let other):
                guard ConstantTime.equals(other.subject.utf8, identity.subject.utf8) else { return fail(.subjectMismatch) }
            }
        }
        var name: String?
        if let user {
            switch AppleUserName.parse(user) {
            case .name(let parsed): name = parsed
            case .noName: break
            case .invalidJSON: request.logger.warning("callback user field ignored", metadata: ["reason": "user_json_invalid"])
            }
        }
        if let denial = settings.access.check(
            subject: identity.subject, email: identity.email, privateEmail: identity.isPrivateEmail) {
            return fail(.policyDenied(denial), subject: identity.subject)
        }
        let nowMs = UnixTime.nowMs(), now = nowMs / 1000
        let sessionID: [UInt8]
        do { sessionID = try Session.newID() } catch { return fail(.internalError) }
        var session = Session(
            id: sessionID, subject: identity.subject, email: identity.email, emailVerified: identity.emailVerified,
            privateEmail: identity.isPrivateEmail, name: name, issuedAt: now, expiresAt: now + settings.lifetime,
            idleDeadline: min(now + settings.idleTimeout, now + settings.lifetime), lastRevalidation: now,
            appleRefreshToken: tokens.refreshToken.flatMap { $0.utf8.count <= 2048 && !$0.isEmpty ? $0 : nil }, issuedAtMillis: UInt16(nowMs % 1000))
        // Revalidation and revocation ask Apple with the Services ID the code was exchanged with.
        if realm.clientID != settings.clientID { session.appleClientID = realm.clientID }
        session.extras = settings.sessionExtras(for: identity)
        guard var cookie = seal(session, now: now) else { return fail(.sessionTooLarge) }
        if cookie.count > 4000, session.appleRefreshToken != nil {
            // Stay under the browsers' 4 KB cookie limit: revalidation is the dispensable part.
            session.appleRefreshToken = nil
            guard let smaller = seal(session, now: now) else { return fail(.sessionTooLarge) }
            cookie = smaller
        }
        guard cookie.count <= 4000 else { return fail(.sessionTooLarge) }
        let target = login.flatMap { settings.redirects.safeTarget($0.redirectTarget) } ?? "/"
        var metadata: [String: Logger.MetadataValue] = ["reason": "ok", "sub": "\(identity.subject)"]
        if settings.logEmails, let email = identity.email { metadata["email"] = "\(email)" }
        request.logger.info("login succeeded", metadata: metadata)
        var answer = AuthPages.redirect(303, to: target)
        answer.extraFields.append(("Set-Cookie", cookie))
        answer.userID = identity.subject
        respond(answer, outcome: "ok")
        settings.recordSignIn(identity.subject, platform: "web", atMs: nowMs, logger: request.logger)
        settings.keepRefreshToken(
            tokens.refreshToken, clientID: settings.clientID, subject: identity.subject, atMs: nowMs, logger: request.logger)
    }

    private func seal(_ session: Session, now: Int64) -> [UInt8]? {
        guard let value = try? settings.sessions.sealSession(session, cookieName: realm.sessionContext) else { return nil }
        return SetCookie.session(value, maxAge: session.expiresAt - now, settings: settings, realm: realm)
    }

    private func fail(_ failure: LoginFailure, subject: String? = nil) {
        var metadata: [String: Logger.MetadataValue] = [
            "reason": "\(failure.reason)", "status": .stringConvertible(failure.status),
        ]
        if let subject { metadata["sub"] = "\(subject)" }
        request.logger.warning("login failed", metadata: metadata)
        respond(AuthPages.failure(
            failure, json: request.isAPIClient, loginPath: settings.loginPath, pages: settings.pages(for: request.head), for: request.head),
            outcome: failure.reason)
    }

    /// Answers once; `outcome` ("ok" or the reason code) is counted in `sidecar_logins_total`.
    private func respond(_ answer: LocalResponse, outcome: String) {
        guard !answered else { return }
        answered = true
        metrics.recordLogin(outcome)
        var answer = answer
        if let loginCookie {
            answer.extraFields.append(("Set-Cookie", SetCookie.clearLoginState(name: loginCookie, settings: settings)))
        }
        completion(answer)
    }
}
