import Logging
import SidecarCrypto
import SidecarHTTP
import SidecarStore

/// `POST {prefix}/revoke`: account deletion, as App Store rules require of apps
/// that create accounts — the user's Apple refresh token is revoked at Apple, then every
/// session of that user issued up to now, on every worker (through the store).
///
/// Order, so that a failure never leaves the user believing something happened that did not:
/// Apple first (if it cannot be reached or refuses: 502, nothing revoked here, the session
/// still works and the user can retry); then the store (if it fails: 503, and a retry revokes
/// at Apple again, which Apple answers 200 for an already revoked token); then the upstream
/// is told through the forward queue; then the answer, which clears the cookie.
final class AccountRevocationFlow {
    private let settings: AuthSettings
    private let sessions: SessionReader
    private let apple: AppleCalls
    private let metrics: MetricsRecorder
    private let request: EndpointRequest
    private let completion: (LocalResponse) -> Void

    init(
        settings: AuthSettings, sessions: SessionReader, apple: AppleCalls, metrics: MetricsRecorder,
        request: EndpointRequest, completion: @escaping (LocalResponse) -> Void
    ) {
        self.settings = settings
        self.sessions = sessions
        self.apple = apple
        self.metrics = metrics
        self.request = request
        self.completion = completion
    }

    /// Answers through `completion` (on the next turn of the loop when Apple need not be asked).
    func start() {
        var identity = RequestIdentity()
        sessions.identify(request.head, trace: request.trace, into: &identity)
        guard let session = identity.session else {
            finish(.unauthenticated, answer: unauthenticated())
            return
        }
        // A bearer token cannot be sent by another site; a cookie can (a cross-site form
        // POST carries a SameSite=Lax cookie on some browsers and in older ones always).
        if identity.bearer == nil && !SessionEndpoints.isSameSite(request.head, settings: settings) {
            finish(.crossSite, session: session, answer: crossSite())
            return
        }
        guard let refreshToken = session.appleRefreshToken else {
            revokeLocally(session, apple: .noRefreshToken)
            return
        }
        apple.revoke(refreshToken, clientID: session.appleClientID ?? settings.clientID, trace: request.trace) {
            [self] result in
            switch result {
            case .success: revokeLocally(session, apple: .revoked)
            case .failure(let failure): finish(.appleFailed, session: session, reason: failure.reason, answer: appleFailed(failure.reason))
            }
        }
    }

    /// Every session of the user issued up to this millisecond ends, on every worker; kept
    /// until the longest of them has expired.
    private func revokeLocally(_ session: Session, apple outcome: AccountDeletionOutcome) {
        let nowMs = UnixTime.nowMs()
        let keepUntil = nowMs / 1000 + settings.lifecycle.sessionLifetime + settings.lifecycle.leeway
        let spanStartNs = apple.spanStart(for: request.trace)
        settings.shared.store.revokeSubject(session.subject, issuedAtOrBeforeMs: nowMs, keepUntil: keepUntil) {
            [self] result in
            if spanStartNs != 0 {
                apple.spans?.recordStoreCall(.storeRevoke, of: request.trace, startNs: spanStartNs, failed: result.isFailure)
            }
            if case .failure(let error) = result {
                request.logger.error("account deletion not recorded", metadata: [
                    "reason": "store_failed", "error": "\(error)",
                ])
                return finish(.storeFailed, session: session, answer: AuthPages.storeUnavailable(
                    json: request.isAPIClient, loginPath: settings.loginPath, pages: settings.pages(for: request.head), for: request.head))
            }
            // The account is gone: a token kept for the operator has nothing left to revoke.
            settings.forgetRefreshToken(session.subject, logger: request.logger)
            tellUpstream(session, atMs: nowMs) { [self] in
                finish(outcome, session: session, answer: revoked(outcome))
            }
        }
    }

    /// With `notifications.forward_to`, the upstream learns of the deletion as of an Apple
    /// event (it may hold the user's data). A queue failure is logged loudly but does not
    /// undo the deletion: the user's sessions and Apple's token are already gone.
    private func tellUpstream(_ session: Session, atMs: Int64, then next: @escaping () -> Void) {
        guard settings.lifecycle.forwardTo != nil else { return next() }
        let payload = Self.eventJSON(
            subject: session.subject, eventTimeMs: atMs, audience: session.appleClientID ?? settings.clientID)
        let spanStartNs = apple.spanStart(for: request.trace)
        settings.shared.store.enqueueForward(payload: payload) { [self] result in
            if spanStartNs != 0 {
                apple.spans?.recordStoreCall(.storeEnqueue, of: request.trace, startNs: spanStartNs, failed: result.isFailure)
            }
            switch result {
            case .success: settings.shared.forwardDoorbell?.notify()
            case .failure(let error):
                request.logger.error("account deletion not forwarded to the upstream", metadata: [
                    "reason": "forward_queue_failed", "error": "\(error)", "sub": "\(session.subject)",
                    ])
            }
            next()
        }
    }

    /// What `notifications.forward_to` receives: the shape of a forwarded Apple deletion
    /// event (`NotificationForwarder.eventJSON`: the type under the name the forwarder uses for
    /// both of Apple's spellings, so the upstream handles one name), with `source: sidecar`
    /// and a random `jti` the upstream can deduplicate redeliveries on.
    static func eventJSON(subject: String, eventTimeMs: Int64, audience: String) -> [UInt8] {
        let jti = (try? SecureRandom.bytes(16)).map(Base64URL.encode) ?? "sidecar-\(eventTimeMs)"
        let object: [String: JSONValue] = [
            "type": .string("account-deleted"), "sub": .string(subject), "event_time": .integer(eventTimeMs),
            "jti": .string(jti), "aud": .string(audience), "source": .string("sidecar"),
        ]
        return Array(JSONValue.object(object).jsonText.utf8)
    }

    // MARK: answers

    private func finish(
        _ outcome: AccountDeletionOutcome, session: Session? = nil, reason: String? = nil, answer: LocalResponse
    ) {
        metrics.recordAccountDeletion(outcome)
        var metadata: Logger.Metadata = [
            "outcome": "\(outcome.label)", "status": .stringConvertible(answer.status),
        ]
        if let session { metadata["sub"] = "\(session.subject)" }
        if let reason { metadata["reason"] = "\(reason)" }
        switch outcome {
        case .revoked, .noRefreshToken: request.logger.notice("account deleted", metadata: metadata)
        case .appleFailed, .storeFailed: request.logger.warning("account deletion failed; nothing revoked", metadata: metadata)
        case .crossSite, .unauthenticated: request.logger.info("account deletion refused", metadata: metadata)
        }
        var answer = answer
        answer.userID = session?.subject
        completion(answer)
    }

    private func revoked(_ apple: AccountDeletionOutcome) -> LocalResponse {
        var answer: LocalResponse
        let target = redirectTarget()
        if request.isAPIClient {
            answer = AuthPages.json(200, .object(["revoked": .bool(true), "apple": .string(apple.label)]))
        } else if let target {
            answer = AuthPages.redirect(303, to: target)
        } else {
            answer = settings.pages(for: request.head).accountDeleted(loginURL: Array(settings.loginPath.utf8), for: request.head)
        }
        answer.extraFields.append(("Set-Cookie", SetCookie.clearSession(settings: settings, for: request.head)))
        return answer
    }

    /// `rd` from the query, else from a form body (a plain HTML form button).
    private func redirectTarget() -> String? {
        let head = request.head
        let rd = head.query.flatMap { FormFields(head.bytes($0)) }?.single("rd")
            ?? (request.body.isEmpty ? nil : FormFields(request.body)?.single("rd"))
        return rd.flatMap { settings.redirects.safeTarget($0) }
    }

    private func appleFailed(_ reason: String) -> LocalResponse {
        if request.isAPIClient {
            return AuthPages.json(502, .object(["error": .string("apple_unavailable"), "reason": .string(reason)]))
        }
        return settings.pages(for: request.head).error(
            502, reason: reason, title: .accountNotDeletedTitle, message: .revocationFailedMessage, for: request.head)
    }

    private func crossSite() -> LocalResponse {
        if request.isAPIClient { return AuthPages.json(403, .object(["error": .string("cross_site")])) }
        return settings.pages(for: request.head).error(
            403, reason: "cross_site", title: .accountNotDeletedTitle, message: .deletionCrossSiteMessage,
            for: request.head)
    }

    private func unauthenticated() -> LocalResponse {
        if request.isAPIClient {
            var answer = AuthPages.json(401, .object(["error": .string("unauthenticated"), "login": .string(settings.loginPath)]))
            answer.extraFields.append(("WWW-Authenticate", Array("Bearer realm=\"sidecar\"".utf8)))
            return answer
        }
        return settings.pages(for: request.head).unauthorized(
            loginURL: Array(settings.loginPath.utf8), message: .deletionNeedsSignInMessage, for: request.head)
    }
}

/// `sidecar_account_deletions_total{outcome}`: what `POST {prefix}/revoke` did.
enum AccountDeletionOutcome: Int, CaseIterable {
    case revoked = 0, noRefreshToken, appleFailed, storeFailed, crossSite, unauthenticated

    var label: String {
        switch self {
        case .revoked: "revoked"
        case .noRefreshToken: "no_refresh_token"
        case .appleFailed: "apple_failed"
        case .storeFailed: "store_failed"
        case .crossSite: "cross_site"
        case .unauthenticated: "unauthenticated"
        }
    }
}
