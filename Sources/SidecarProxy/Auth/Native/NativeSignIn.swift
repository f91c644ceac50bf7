import Logging
import SidecarCrypto
import SidecarHTTP

/// Sign-in for native apps: the iOS/macOS flow (`POST {prefix}/native`, `NativeSignInFlow`)
/// with its nonces, the bearer refresh, and the Android apps' relay of Apple's web answer.
/// Where no native audience (or Android package) is configured, its endpoints are 404.
final class NativeSignIn {
    private var settings: AuthSettings
    private let sessions: SessionReader
    private let revalidator: SessionRevalidator
    private let apple: AppleCalls
    private let metrics: MetricsRecorder

    init(
        settings: AuthSettings, sessions: SessionReader, revalidator: SessionRevalidator, apple: AppleCalls,
        metrics: MetricsRecorder
    ) {
        self.settings = settings
        self.sessions = sessions
        self.revalidator = revalidator
        self.apple = apple
        self.metrics = metrics
    }

    func apply(_ new: AuthSettings) { settings = new }

    /// Whether `POST {prefix}/native` exists here (native audiences are configured).
    var isEnabled: Bool { settings.nativeEnabled }

    /// `POST {prefix}/native`, where `isEnabled`.
    func signIn(_ request: EndpointRequest, completion: @escaping (LocalResponse) -> Void) {
        NativeSignInFlow(settings: settings, apple: apple, metrics: metrics, request: request, completion: completion).start()
    }

    /// `GET {prefix}/native/nonce` → `{"nonce": "<sealed>", "expires_at": <unix s>}`.
    func nonce(_ request: EndpointRequest) -> LocalResponse {
        let settings = self.settings
        guard settings.nativeEnabled else { return .plain(404) }
        let expiresAt = UnixTime.now() + AuthShared.nativeNonceSeconds
        let sealed: String
        do {
            sealed = try settings.nativeNonces.seal(NativeNonce.random(expiresAt: expiresAt), context: NativeNonces.context)
        } catch {
            request.logger.error("native nonce failed", metadata: ["reason": "internal_error"])
            return AuthPages.json(500, .object(["error": .string("internal_error")]))
        }
        return AuthPages.json(200, .object(["nonce": .string(sealed), "expires_at": .integer(expiresAt)]))
    }

    /// Same session id, subject, absolute expiry and Apple refresh token; a new idle deadline
    /// (`session.idle_timeout` from now, capped by the absolute expiry), the first secret, and
    /// the latest revalidation (`session.revalidate`).
    /// The old token stays valid until its own idle deadline: an app that lost the answer
    /// can still retry with it.
    func refresh(_ request: EndpointRequest) -> LocalResponse {
        let settings = self.settings
        guard settings.nativeEnabled else { return .plain(404) }
        let now = UnixTime.now()
        let opened: OpenedSession
        switch sessions.bearerSession(request.head, now: now) {
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
        if revalidator.isRevalidationDue(renewed, now: now),
           let confirmedAt = revalidator.revalidate(opened, now: now, trace: request.trace) {
            renewed.lastRevalidation = confirmedAt
        }
        renewed.idleDeadline = max(renewed.idleDeadline, min(now + settings.idleTimeout, renewed.expiresAt))
        let token: String
        do {
            token = try settings.sessions.sealSession(
                renewed, cookieName: settings.realms.all[settings.realms.realm(of: request.head)].sessionContext)
        } catch {
            request.logger.error("native refresh failed", metadata: ["reason": "internal_error", "status": .stringConvertible(500)])
            return NativeAnswers.error(500, "internal_error")
        }
        metrics.recordNativeRefresh(.accepted)
        request.logger.info("native session refreshed", metadata: ["reason": "ok", "sub": "\(renewed.subject)"])
        var answer = NativeAnswers.session(token: token, renewed)
        answer.userID = renewed.subject
        return answer
    }

    private func refuseRefresh(_ outcome: SessionOutcome?, reason: String, _ request: EndpointRequest) -> LocalResponse {
        metrics.recordNativeRefresh(outcome)
        request.logger.info("native refresh refused", metadata: ["reason": "\(reason)", "status": .stringConvertible(401)])
        return NativeAnswers.error(401, reason)
    }

    /// `POST {prefix}/android/callback` (`AndroidRelay`): Apple's answer handed back to the app.
    func androidCallback(_ request: EndpointRequest) -> LocalResponse {
        let settings = self.settings
        guard !settings.androidPackages.isEmpty else { return .plain(404) }
        let head = request.head
        do throws(AndroidRelay.Refusal) {
            let package = try AndroidRelay.package(
                query: head.query.flatMap { FormFields(head.bytes($0)) }, listed: settings.androidPackages)
            guard let form = FormFields(request.body) else { throw .formInvalid }
            let location = try AndroidRelay.intentURL(form: form, package: package)
            // Field values are the user's and Apple's (and anyone's who posts here): not logged.
            request.logger.info("android relay", metadata: [
                "reason": "ok", "package": "\(package)", "apple_error": "\(form.single("error") != nil)",
            ])
            return LocalResponse(
                status: 307, reason: "Temporary Redirect", contentType: "text/plain; charset=utf-8",
                body: Array("Returning to the app.\n".utf8), extraFields: [("Location", Array(location.utf8))])
        } catch {
            request.logger.warning("android relay refused", metadata: ["reason": "\(error.rawValue)", "status": .stringConvertible(400)])
            return NativeAnswers.error(400, error.rawValue)
        }
    }
}
