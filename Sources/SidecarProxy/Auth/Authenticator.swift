import Logging
import SidecarEvent
import SidecarHTTP

/// A worker's sign-in machinery (loop thread only), put together from its parts: the request
/// path's `SessionReader`, the web sign-in, the session endpoints, native sign-in, the
/// revalidation of sessions with Apple, `limits.sign_in_rate`, and the way out to Apple they
/// share. Each part owns its state; this owns the parts, routes each endpoint to the one that
/// answers it, and hands a reload to all of them at once.
final class Authenticator {
    private(set) var settings: AuthSettings
    /// What `EndpointRequest.logger` starts from (made once: a Logger asks the bootstrap).
    static let endpointLogger = Logger(label: "sidecar.auth")
    /// Where the endpoints' later answers wait for the loop's next turn.
    private let nextTurn: NextTurn
    private let metrics: MetricsRecorder
    private let apple: AppleCalls
    /// Sessions on the request path; the access policy holds it too and calls it directly.
    let sessions: SessionReader
    private let revalidator: SessionRevalidator
    private let webSignIn: WebSignIn
    private let sessionEndpoints: SessionEndpoints
    private let native: NativeSignIn
    private var rateLimit: SignInRateLimit

    init(loop: EventLoop, settings: AuthSettings, upstreamTimeoutMs: Int64, metrics: MetricsRecorder) throws(AuthSetupError) {
        let logger = Logger(label: "sidecar.auth")
        nextTurn = loop.nextTurn
        self.settings = settings
        self.metrics = metrics
        apple = try AppleCalls(
            loop: loop, settings: settings, upstreamTimeoutMs: upstreamTimeoutMs, metrics: metrics, logger: logger)
        revalidator = SessionRevalidator(settings: settings, apple: apple, metrics: metrics, logger: logger)
        sessions = try SessionReader(settings: settings, metrics: metrics, logger: logger, revalidator: revalidator)
        webSignIn = WebSignIn(settings: settings, apple: apple, metrics: metrics)
        sessionEndpoints = SessionEndpoints(settings: settings, sessions: sessions, apple: apple)
        native = NativeSignIn(
            settings: settings, sessions: sessions, revalidator: revalidator, apple: apple, metrics: metrics)
        rateLimit = SignInRateLimit(settings: settings, logger: logger)
    }

    /// A reload: new settings; a new Apple client only if Apple's address changed. What can
    /// fail (the session keys, that client) is made first: if it fails, the old settings stay
    /// in every part.
    func apply(_ new: AuthSettings) throws(AuthSetupError) {
        let openers = try SessionReader.makeOpeners(new)
        let client = try apple.client(for: new)
        settings = new
        apple.apply(new, client: client)
        sessions.apply(new, openers: openers)
        revalidator.apply(new)
        webSignIn.apply(new)
        sessionEndpoints.apply(new)
        native.apply(new)
        rateLimit.apply(new)
    }

    func stop() { apple.stop() }

    /// Where the sign-in flows record their calls; nil when spans are not exported.
    var spans: SpanSink? {
        get { apple.spans }
        set { apple.spans = newValue }
    }

    /// `limits.sign_in_rate`'s 429 for a request to `endpoint`, or nil (see `SignInRateLimit`).
    func signInRateRefusal(
        _ endpoint: AuthEndpoint, _ head: HTTPRequestHead, peer: [UInt8], peerTrusted: Bool,
        apiClient: @autoclosure () -> Bool
    ) -> LocalResponse? {
        rateLimit.refusal(endpoint, head, peer: peer, peerTrusted: peerTrusted, apiClient: apiClient())
    }

    /// Runs an endpoint: its answer now, or `.later` through `completion`, which then runs on
    /// a later turn of this loop — never before this call returned, whatever the flow waited
    /// on (a key set already cached, a store on this machine answer at once).
    func handle(
        _ endpoint: AuthEndpoint, _ request: EndpointRequest, completion: @escaping (LocalResponse) -> Void
    ) -> EndpointAnswer {
        switch endpoint {
        case .login: return .now(webSignIn.login(request))
        case .logout: return sessionEndpoints.logout(request, completion: onNextTurn(completion))
        case .me: return .now(sessionEndpoints.me(request))
        case .check: return .now(sessionEndpoints.check(request))
        case .jwks: return .now(sessionEndpoints.jwks(request))
        case .callback:
            webSignIn.callback(request, completion: onNextTurn(completion))
        case .native:
            guard native.isEnabled else { return .now(.plain(404)) }  // no native apps configured
            native.signIn(request, completion: onNextTurn(completion))
        case .nativeNonce: return .now(native.nonce(request))
        case .nativeRefresh: return .now(native.refresh(request))
        case .androidCallback: return .now(native.androidCallback(request))
        case .appleNotifications:
            NotificationFlow(
                settings: settings, apple: apple, metrics: metrics, request: request, completion: onNextTurn(completion)
            ).start()
        case .revoke:
            AccountRevocationFlow(
                settings: settings, sessions: sessions, apple: apple, metrics: metrics, request: request,
                completion: onNextTurn(completion)
            ).start()
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
