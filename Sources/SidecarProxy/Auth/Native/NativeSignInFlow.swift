import Logging
import SidecarApple
import SidecarCrypto
import SidecarHTTP

/// `POST {prefix}/native` as a small asynchronous flow, like `CallbackFlow`:
/// body → nonce → identity token (`aud` ∈ `apple.native_audiences`, or the Services ID for the
/// Android relay's tokens) → single use → access
/// policy → the authorization code exchanged for an Apple refresh token → the sealed session
/// handed back as a bearer token. Every failure is one log line and one
/// `sidecar_native_signins_total` outcome with a reason, answered `{"error": "<reason>"}`.
final class NativeSignInFlow {
    private let settings: AuthSettings
    private let apple: AppleCalls
    private let metrics: MetricsRecorder
    private let request: EndpointRequest
    private let completion: (LocalResponse) -> Void
    private var answered = false
    private var nonce: NonceExpectation = .none
    /// The body's nonce, spent once the token proved it belongs to this sign-in.
    private var nonceClaim: NativeNonces.Claim?

    init(
        settings: AuthSettings, apple: AppleCalls, metrics: MetricsRecorder, request: EndpointRequest,
        completion: @escaping (LocalResponse) -> Void
    ) {
        self.settings = settings
        self.apple = apple
        self.metrics = metrics
        self.request = request
        self.completion = completion
    }

    /// Runs only where native apps are configured (elsewhere the endpoint does not exist).
    func start() {
        let body: NativeSignInBody
        do throws(NativeSignInBody.Problem) { body = try NativeSignInBody.parse(request.body) } catch {
            return fail(error.failure)
        }
        if let given = body.nonce {
            do throws(LoginFailure) {
                let checked = try NativeNonces.check(given, sealer: settings.nativeNonces, now: UnixTime.now())
                nonce = checked.expectation
                nonceClaim = checked.claim
            } catch {
                return fail(error)
            }
        } else if settings.nativeRequireNonce {
            return fail(.nonceRequired)
        }
        if let package = body.androidPackage, !settings.androidPackages.contains(package) {
            return fail(.androidPackageNotListed)
        }
        verify(body.identityToken, expecting: nonce, failure: LoginFailure.token) { [self] identity, keys in
            signIn(identity, body: body, keys: keys)
        }
    }

    /// Verifies `token` against Apple's keys (refetching once for an unknown kid, rate-limited
    /// like the callback), then continues with the identity and the keys that verified it.
    private func verify(
        _ token: String, expecting nonce: NonceExpectation, failure: @escaping (JWTError) -> LoginFailure,
        then next: @escaping (AppleIdentity, JWKSet) -> Void
    ) {
        let verifier = settings.nativeVerifier
        func check(_ keys: JWKSet) -> Result<AppleIdentity, JWTError> {
            Result { () throws(JWTError) in try verifier.verify(token, keys: keys, now: UnixTime.now(), nonce: nonce) }
        }
        apple.keys.withKeys { [self] keys in
            guard let keys else { return fail(.keysUnavailable) }
            switch check(keys) {
            case .success(let identity):
                next(identity, keys)
            case .failure(.unknownKey):
                let spanStartNs = apple.spans == nil || !request.trace.isSampled ? 0 : SpanClock.nowNs()
                apple.keys.refetchForUnknownKey { [self] fresh in
                    if spanStartNs != 0 {
                        apple.spans?.recordCall(.appleKeys, of: request.trace, method: .get, startNs: spanStartNs,
                                               status: 0, failed: fresh == nil)
                    }
                    guard let fresh else { return fail(failure(.unknownKey)) }
                    switch check(fresh) {
                    case .success(let identity): next(identity, fresh)
                    case .failure(let error): fail(failure(error))
                    }
                }
            case .failure(let error):
                fail(failure(error))
            }
        }
    }

    /// The token is Apple's and fresh: spend its nonce, apply the policy, then the code.
    private func signIn(_ identity: AppleIdentity, body: NativeSignInBody, keys: JWKSet) {
        let now = UnixTime.now()
        var redirectURI: String?
        if settings.clientIDs.contains(identity.audience) {
            // A web-flow token through the Android relay: only with a nonce of ours named in the
            // body, whatever native_require_nonce says; its code was issued for the relay URL the
            // app used.
            guard nonceClaim != nil else { return fail(.androidNonceRequired, subject: identity.subject) }
            redirectURI = settings.androidRelayURI
                + (body.androidPackage.map { "?package=" + PercentEncoding.encode($0) } ?? "")
        }
        var claim = nonceClaim
        if claim == nil, let carried = identity.nonce {
            do throws(LoginFailure) {
                claim = try NativeNonces.implicitClaim(
                    tokenNonce: carried, sealer: settings.nativeNonces, now: now,
                    tokenValidUntil: identity.expiresAt + settings.nativeVerifier.leeway)
            } catch {
                return fail(error, subject: identity.subject)
            }
        }
        // Spent before Apple is asked, so two concurrent replays cannot both get through; a
        // failed exchange then costs the app a new nonce, which a retry needs anyway (new code).
        guard let claim else { return afterNonceSpent(identity, body: body, redirectURI: redirectURI) }
        let claimStartNs = apple.spans == nil ? 0 : SpanClock.nowNs()
        settings.shared.claimOnce(.nativeNonce, claim.key, until: claim.until) { [self] result in
            if claimStartNs != 0 { apple.spans?.recordClaim(of: request.trace, startNs: claimStartNs, result) }
            switch result {
            case .claimed: afterNonceSpent(identity, body: body, redirectURI: redirectURI)
            case .alreadyUsed: fail(.nonceReplayed, subject: identity.subject)
            case .unavailable(let why):
                request.logger.error("native nonce could not be spent", metadata: ["error": "\(why)"])
                fail(.storeUnavailable, subject: identity.subject)
            }
        }
    }

    private func afterNonceSpent(_ identity: AppleIdentity, body: NativeSignInBody, redirectURI: String?) {
        // Before the exchange: a denied user costs no call to Apple.
        if let denial = settings.access.check(
            subject: identity.subject, email: identity.email, privateEmail: identity.isPrivateEmail) {
            return fail(.policyDenied(denial), subject: identity.subject)
        }
        guard let code = body.authorizationCode else { return finish(identity, name: body.name, refreshToken: nil) }
        exchange(code, identity: identity, redirectURI: redirectURI, name: body.name)
    }

    /// As Apple documents for native apps, the code of an app is exchanged with `client_id` = its bundle
    /// id (the token's audience), a client secret whose `sub` is that bundle id, and no
    /// `redirect_uri` — or, for an Android web-flow token, the Services ID and the relay URL.
    /// Apple's id_token for the code must name the same user and client, or the app sent
    /// someone else's code with its token.
    private func exchange(_ code: String, identity: AppleIdentity, redirectURI: String?, name: String?) {
        let clientID = identity.audience
        let secret: String
        do {
            secret = try settings.secrets.secret(forClientID: clientID)
        } catch {
            request.logger.error("client secret could not be signed", metadata: ["error": "\(error)"])
            return fail(.internalError, subject: identity.subject)
        }
        apple.exchangeCode(
            code: code, redirectURI: redirectURI, codeVerifier: nil, clientID: clientID, clientSecret: secret,
            trace: request.trace
        ) { [self] result in
            switch result {
            case .failure(let error):
                if case .rejected(.invalidClient, _, _) = error {
                    let secrets = settings.secrets
                    request.logger.error(
                        "\(CallbackFlow.clientRefusedMessage)",
                        metadata: ["key_id": "\(secrets.keyID)", "team_id": "\(secrets.teamID)", "client_id": "\(clientID)"])
                }
                fail(.nativeExchange(error), subject: identity.subject)
            case .success(let tokens):
                guard let idToken = tokens.idToken, !idToken.isEmpty else { return fail(.noIDToken, subject: identity.subject) }
                verify(idToken, expecting: .none, failure: LoginFailure.codeToken) { [self] other, _ in
                    guard ConstantTime.equals(other.subject.utf8, identity.subject.utf8), other.audience == clientID else {
                        return fail(.codeSubjectMismatch, subject: identity.subject)
                    }
                    finish(identity, name: name, refreshToken: tokens.refreshToken)
                }
            }
        }
    }

    /// A new session (new id: no fixation) sealed exactly like the cookie, answered as JSON.
    private func finish(_ identity: AppleIdentity, name: String?, refreshToken: String?) {
        let nowMs = UnixTime.nowMs(), now = nowMs / 1000
        let sessionID: [UInt8]
        do { sessionID = try Session.newID() } catch { return fail(.internalError, subject: identity.subject) }
        var session = Session(
            id: sessionID, subject: identity.subject, email: identity.email, emailVerified: identity.emailVerified,
            privateEmail: identity.isPrivateEmail, name: name, issuedAt: now, expiresAt: now + settings.lifetime,
            idleDeadline: min(now + settings.idleTimeout, now + settings.lifetime), lastRevalidation: now,
            appleRefreshToken: refreshToken.flatMap { $0.utf8.count <= 2048 && !$0.isEmpty ? $0 : nil },
            appleClientID: identity.audience == settings.clientID ? nil : identity.audience, issuedAtMillis: UInt16(nowMs % 1000))
        session.extras = settings.sessionExtras(for: identity)
        // Bound to the realm of the host it was asked on, where the app is to present it.
        let context = settings.realms.all[settings.realms.realm(of: request.head)].sessionContext
        guard let token = try? settings.sessions.sealSession(session, cookieName: context) else {
            return fail(.sessionTooLarge, subject: identity.subject)
        }
        var metadata: [String: Logger.MetadataValue] = [
            "reason": "ok", "sub": "\(identity.subject)", "aud": "\(identity.audience)",
            "refresh_token": "\(session.appleRefreshToken != nil)",
        ]
        if settings.logEmails, let email = identity.email { metadata["email"] = "\(email)" }
        request.logger.info("native sign-in succeeded", metadata: metadata)
        var answer = NativeAnswers.session(token: token, session)
        answer.userID = identity.subject
        respond(answer, outcome: "ok")
        settings.recordSignIn(identity.subject, platform: "native:" + identity.audience, atMs: nowMs, logger: request.logger)
        settings.keepRefreshToken(
            refreshToken, clientID: identity.audience, subject: identity.subject, atMs: nowMs, logger: request.logger)
    }

    private func fail(_ failure: LoginFailure, subject: String? = nil) {
        var metadata: [String: Logger.MetadataValue] = ["reason": "\(failure.reason)", "status": .stringConvertible(failure.status)]
        if let subject { metadata["sub"] = "\(subject)" }
        request.logger.warning("native sign-in failed", metadata: metadata)
        respond(NativeAnswers.error(failure.status, failure.reason), outcome: failure.reason)
    }

    /// Answers once; `outcome` ("ok" or the reason code) is counted in `sidecar_native_signins_total`.
    private func respond(_ answer: LocalResponse, outcome: String) {
        guard !answered else { return }
        answered = true
        metrics.recordNativeSignIn(outcome)
        completion(answer)
    }
}
